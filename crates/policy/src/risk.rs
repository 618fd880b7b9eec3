//! Risk tiers and the approval decision (`000_…` §08, the design's Policy section): R0 reads,
//! R1 ordinary interaction on a trusted origin, R2 writes on any other origin (a person approves
//! the first per run and origin), R3 high-impact actions (secrets, payment, uploads, downloads,
//! send/delete/purchase-like commits) that ask every time. Page text may raise a tier, never
//! lower it. Pure: grants and time are passed in.

use serde::{Deserialize, Serialize};

use crate::field::Sensitivity;
use crate::navigation::NavigationPolicy;
use crate::origin::Origin;
use crate::words::{contains_phrase, words};

/// How much an action can change, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum RiskTier {
    /// Reading: observe, scroll, hover, wait.
    R0,
    /// Ordinary interaction on a trusted origin.
    R1,
    /// Interaction on any other origin.
    R2,
    /// High impact: asks a person every time.
    R3,
}

impl std::fmt::Display for RiskTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RiskTier::R0 => "R0",
            RiskTier::R1 => "R1",
            RiskTier::R2 => "R2",
            RiskTier::R3 => "R3",
        })
    }
}

/// What an action does, as the runtime classifies it from the action and its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// No change to the page (observe, scroll, hover, wait).
    Read,
    /// Clicks, typing, keys, selection.
    Interact,
    /// Loading another URL in the tab.
    Navigate,
    /// Choosing files to upload.
    Upload,
    /// Saving a download.
    Download,
}

/// The facts a tier is decided from. `element_name` and `element_role` come from the page and
/// can only raise the tier.
#[derive(Debug, Clone, Copy)]
pub struct RiskFacts<'a> {
    /// What the action does.
    pub effect: Effect,
    /// The origin acted on (for a navigation: the destination).
    pub origin: Option<&'a Origin>,
    /// The target element's role (page-derived).
    pub element_role: Option<&'a str>,
    /// The target element's name (page-derived: it can only raise the tier).
    pub element_name: Option<&'a str>,
    /// Sensitivity of the field typed into, if any.
    pub field: Sensitivity,
}

/// Origins a person or the operator registered as trusted: the local project's dev servers
/// and pre-approved sites. `localhost` is trusted only when listed here.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrustConfig {
    /// Exact origins treated as trusted (R1).
    pub trusted_origins: Vec<Origin>,
    /// Trusted origins where credential fields (typing a password, card or code, submitting a
    /// form that holds one) are ordinary interaction instead of R3: a developer's own login form
    /// in automated tests. Only a person's configuration sets this; an origin not also trusted
    /// gains nothing.
    pub credential_origins: Vec<Origin>,
}

impl TrustConfig {
    /// True only for an exact registered origin.
    pub fn trusts(&self, origin: &Origin) -> bool {
        self.trusted_origins.iter().any(|o| o == origin)
    }

    /// True only for an exact origin that is trusted and allowed credential fields.
    pub fn allows_credentials(&self, origin: &Origin) -> bool {
        self.trusts(origin) && self.credential_origins.iter().any(|o| o == origin)
    }
}

/// Commit-like words: an element named like this makes an interaction R3.
const HIGH_IMPACT: &[&[&str]] = &[
    &["buy"],
    &["purchase"],
    &["pay"],
    &["payment"],
    &["checkout"],
    &["check", "out"],
    &["place", "order"],
    &["order", "now"],
    &["confirm", "order"],
    &["send"],
    &["transfer"],
    &["wire"],
    &["withdraw"],
    &["donate"],
    &["delete"],
    &["remove"],
    &["destroy"],
    &["erase"],
    &["unsubscribe"],
    &["cancel", "subscription"],
    &["close", "account"],
    &["publish"],
    &["post"],
    &["submit", "payment"],
    &["refund"],
    &["approve", "payment"],
    &["revoke"],
];
const HIGH_IMPACT_CJK: &[&str] = &[
    "删除",
    "支付",
    "付款",
    "购买",
    "下单",
    "发送",
    "转账",
    "提交订单",
    "注销",
    "購入",
    "送信",
    "削除",
];

/// True when page text names a commit-like action (`Buy now`, `Delete repository`, `发送`).
pub fn names_high_impact(text: &str) -> bool {
    let w = words(text);
    HIGH_IMPACT.iter().any(|p| contains_phrase(&w, p))
        || HIGH_IMPACT_CJK.iter().any(|p| text.contains(p))
}

/// The tier of an action.
pub fn classify(facts: &RiskFacts<'_>, trust: &TrustConfig) -> RiskTier {
    let base = match facts.effect {
        Effect::Read => return RiskTier::R0,
        Effect::Upload | Effect::Download => return RiskTier::R3,
        Effect::Interact | Effect::Navigate => match facts.origin {
            Some(origin) if trust.trusts(origin) => RiskTier::R1,
            _ => RiskTier::R2,
        },
    };
    let secret =
        facts.field.is_secret() && !facts.origin.is_some_and(|o| trust.allows_credentials(o));
    let commit =
        facts.effect == Effect::Interact && facts.element_name.is_some_and(names_high_impact);
    // Page text can only push the tier up.
    if secret || commit { RiskTier::R3 } else { base }
}

/// A person's grant: ordinary actions of `run` on `origin` need no more approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The run the grant belongs to.
    pub run: String,
    /// The exact origin granted.
    pub origin: Origin,
    /// Milliseconds since the Unix epoch; `None` = until the run ends.
    pub expires_at: Option<u64>,
}

/// The grants of a runtime, per run and origin.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    grants: Vec<Grant>,
}

impl Grants {
    /// Records a grant for (run, origin).
    pub fn grant(&mut self, grant: Grant) {
        self.grants
            .retain(|g| !(g.run == grant.run && g.origin == grant.origin));
        self.grants.push(grant);
    }

    /// Voids the run's grant for `origin` (a same-tab redirect to another origin).
    pub fn revoke(&mut self, run: &str, origin: &Origin) {
        self.grants
            .retain(|g| !(g.run == run && &g.origin == origin));
    }

    /// Forgets every grant of a run (its end).
    pub fn end_run(&mut self, run: &str) {
        self.grants.retain(|g| g.run != run);
    }

    /// Every origin `run` holds an unexpired grant for.
    pub fn origins(&self, run: &str, now: u64) -> Vec<Origin> {
        self.grants
            .iter()
            .filter(|g| g.run == run && g.expires_at.is_none_or(|t| now < t))
            .map(|g| g.origin.clone())
            .collect()
    }

    /// True when `run` holds an unexpired grant for exactly `origin`.
    pub fn covers(&self, run: &str, origin: &Origin, now: u64) -> bool {
        self.grants
            .iter()
            .any(|g| g.run == run && &g.origin == origin && g.expires_at.is_none_or(|t| now < t))
    }
}

/// What the runtime must do before the action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Go ahead.
    Allow,
    /// A person must approve first.
    Ask {
        /// The tier that needs approval.
        tier: RiskTier,
        /// Why, for the person.
        reason: String,
    },
    /// Never (a blocked origin, a refused scheme).
    Deny {
        /// Why.
        reason: String,
    },
}

/// One action about to happen.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The run acting.
    pub run: &'a str,
    /// The action's tier.
    pub tier: RiskTier,
    /// The origin acted on.
    pub origin: Option<&'a Origin>,
}

/// The decision for `request`: blocked origins are denied; R0 and R1 go ahead; R2 goes ahead
/// under a grant for (run, origin), else asks; R3 asks every time. (A person's one-time approval
/// of an exact action is the runtime's record, consumed after `Ask`.)
pub fn decide(
    request: &Request<'_>,
    grants: &Grants,
    navigation: &NavigationPolicy,
    now: u64,
) -> Decision {
    if let Some(origin) = request.origin
        && let Err(e) = crate::navigation::check_origin(origin, navigation)
    {
        return Decision::Deny {
            reason: e.to_string(),
        };
    }
    match request.tier {
        RiskTier::R0 | RiskTier::R1 => Decision::Allow,
        RiskTier::R2 => match request.origin {
            Some(origin) if grants.covers(request.run, origin, now) => Decision::Allow,
            Some(origin) => Decision::Ask {
                tier: RiskTier::R2,
                reason: format!(
                    "{} is not a trusted origin and nothing there is allowed for this task yet",
                    origin.serialize_web()
                ),
            },
            None => Decision::Ask {
                tier: RiskTier::R2,
                reason: "the page has no web origin".into(),
            },
        },
        RiskTier::R3 => Decision::Ask {
            tier: RiskTier::R3,
            reason: "high-impact action: approval is needed every time".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(s: &str) -> Origin {
        Origin::parse(s).unwrap()
    }

    fn facts<'a>(
        effect: Effect,
        o: Option<&'a Origin>,
        name: Option<&'a str>,
        field: Sensitivity,
    ) -> RiskFacts<'a> {
        RiskFacts {
            effect,
            origin: o,
            element_role: Some("button"),
            element_name: name,
            field,
        }
    }

    /// A person may let credential fields be ordinary on a trusted origin of theirs (a dev
    /// server's login form); an untrusted origin listed there gains nothing, and other high
    /// impact stays R3.
    #[test]
    fn credential_origins_lower_only_credential_writes_on_trusted_origins() {
        let local = origin("http://127.0.0.1:5173");
        let other = origin("https://shop.example");
        let trust = TrustConfig {
            trusted_origins: vec![local.clone()],
            credential_origins: vec![local.clone(), other.clone()],
        };
        let secret = Sensitivity::Secret(crate::SecretKind::Password);
        assert_eq!(
            classify(
                &facts(Effect::Interact, Some(&local), Some("Password"), secret),
                &trust
            ),
            RiskTier::R1
        );
        assert_eq!(
            classify(
                &facts(Effect::Interact, Some(&other), Some("Password"), secret),
                &trust
            ),
            RiskTier::R3,
            "not trusted: nothing gained"
        );
        assert_eq!(
            classify(
                &facts(
                    Effect::Interact,
                    Some(&local),
                    Some("Buy now"),
                    Sensitivity::Public
                ),
                &trust
            ),
            RiskTier::R3
        );
        assert_eq!(
            classify(
                &facts(Effect::Interact, Some(&local), Some("Password"), secret),
                &TrustConfig {
                    trusted_origins: vec![local.clone()],
                    ..Default::default()
                }
            ),
            RiskTier::R3
        );
    }

    #[test]
    fn tiers_decision_table() {
        let local = origin("http://127.0.0.1:5173");
        let other = origin("https://shop.example");
        let trust = TrustConfig {
            trusted_origins: vec![local.clone()],
            ..Default::default()
        };
        let unregistered_localhost = origin("http://localhost:3000");
        let secret = Sensitivity::Secret(crate::SecretKind::Password);
        let cases: &[(RiskFacts<'_>, RiskTier)] = &[
            (
                facts(Effect::Read, Some(&other), None, Sensitivity::Public),
                RiskTier::R0,
            ),
            (
                facts(
                    Effect::Interact,
                    Some(&local),
                    Some("Save"),
                    Sensitivity::Public,
                ),
                RiskTier::R1,
            ),
            (
                facts(
                    Effect::Interact,
                    Some(&other),
                    Some("Save"),
                    Sensitivity::Public,
                ),
                RiskTier::R2,
            ),
            (
                facts(
                    Effect::Interact,
                    Some(&unregistered_localhost),
                    Some("Save"),
                    Sensitivity::Public,
                ),
                RiskTier::R2,
            ),
            (
                facts(
                    Effect::Interact,
                    Some(&local),
                    Some("Buy now"),
                    Sensitivity::Public,
                ),
                RiskTier::R3,
            ),
            (
                facts(
                    Effect::Interact,
                    Some(&local),
                    Some("Delete repository"),
                    Sensitivity::Public,
                ),
                RiskTier::R3,
            ),
            (
                facts(
                    Effect::Interact,
                    Some(&local),
                    Some("确认支付"),
                    Sensitivity::Public,
                ),
                RiskTier::R3,
            ),
            (
                facts(Effect::Interact, Some(&local), Some("Password"), secret),
                RiskTier::R3,
            ),
            (
                facts(Effect::Navigate, Some(&local), None, Sensitivity::Public),
                RiskTier::R1,
            ),
            (
                facts(Effect::Navigate, Some(&other), None, Sensitivity::Public),
                RiskTier::R2,
            ),
            (
                facts(Effect::Upload, Some(&local), None, Sensitivity::Public),
                RiskTier::R3,
            ),
            (
                facts(Effect::Download, Some(&local), None, Sensitivity::Public),
                RiskTier::R3,
            ),
            (
                facts(Effect::Interact, None, Some("Save"), Sensitivity::Public),
                RiskTier::R2,
            ),
            // Page text cannot lower a tier: "trusted" or "safe" words change nothing.
            (
                facts(
                    Effect::Interact,
                    Some(&other),
                    Some("Safe, pre-approved action"),
                    Sensitivity::Public,
                ),
                RiskTier::R2,
            ),
            (
                facts(
                    Effect::Interact,
                    Some(&other),
                    Some("Sort order"),
                    Sensitivity::Public,
                ),
                RiskTier::R2,
            ),
            // Words raise: a refund is a commit.
            (
                facts(
                    Effect::Interact,
                    Some(&local),
                    Some("Refund all orders"),
                    Sensitivity::Public,
                ),
                RiskTier::R3,
            ),
        ];
        for (i, (f, want)) in cases.iter().enumerate() {
            assert_eq!(classify(f, &trust), *want, "case {i}: {:?}", f.element_name);
        }
    }

    #[test]
    fn grants_cover_exact_run_and_origin_until_revoked_or_expired() {
        let shop = origin("https://shop.example");
        let sub = origin("https://evil.shop.example");
        let nav = NavigationPolicy::default();
        let mut grants = Grants::default();
        let ask = |g: &Grants, o: &Origin, tier, now| {
            decide(
                &Request {
                    run: "run_1",
                    tier,
                    origin: Some(o),
                },
                g,
                &nav,
                now,
            )
        };
        assert!(matches!(
            ask(&grants, &shop, RiskTier::R2, 0),
            Decision::Ask { .. }
        ));
        grants.grant(Grant {
            run: "run_1".into(),
            origin: shop.clone(),
            expires_at: Some(1000),
        });
        assert_eq!(ask(&grants, &shop, RiskTier::R2, 10), Decision::Allow);
        assert!(
            matches!(ask(&grants, &sub, RiskTier::R2, 10), Decision::Ask { .. }),
            "no suffix matching"
        );
        assert!(
            matches!(ask(&grants, &shop, RiskTier::R3, 10), Decision::Ask { .. }),
            "R3 asks every time"
        );
        assert!(
            matches!(
                decide(
                    &Request {
                        run: "run_2",
                        tier: RiskTier::R2,
                        origin: Some(&shop)
                    },
                    &grants,
                    &nav,
                    10
                ),
                Decision::Ask { .. }
            ),
            "grants are per run"
        );
        assert!(
            matches!(
                ask(&grants, &shop, RiskTier::R2, 1000),
                Decision::Ask { .. }
            ),
            "expired"
        );
        grants.grant(Grant {
            run: "run_1".into(),
            origin: shop.clone(),
            expires_at: None,
        });
        grants.revoke("run_1", &shop);
        assert!(
            matches!(ask(&grants, &shop, RiskTier::R2, 10), Decision::Ask { .. }),
            "revoked"
        );
        let blocked = NavigationPolicy {
            blocked_origins: vec![shop.clone()],
            ..Default::default()
        };
        assert!(matches!(
            decide(
                &Request {
                    run: "run_1",
                    tier: RiskTier::R0,
                    origin: Some(&shop)
                },
                &grants,
                &blocked,
                0
            ),
            Decision::Deny { .. }
        ));
    }
}

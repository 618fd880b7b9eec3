//! Surface Context: construction rules, alias resolution and the per-turn surface enum.

use protocol::surface::SurfaceContextError;
use protocol::{
    Capability, ContextId, ErrorCode, Preview, ProviderRequestId, Region, SurfaceAlias,
    SurfaceContext, SurfaceEntry, SurfaceKey, SurfaceKind, SurfaceName, TurnId,
};

fn alias(a: &str) -> SurfaceAlias {
    SurfaceAlias::new(a).expect("valid alias")
}

fn entry(key: u32, aliases: &[&str], caps: Vec<Capability>) -> SurfaceEntry {
    SurfaceEntry::new(
        SurfaceKey::from_index(key),
        aliases.iter().map(|a| alias(a)).collect(),
        SurfaceKind::WebTab,
        Some(Region::Right),
        caps,
        Some(Preview::unavailable("Docs", "https://docs.test", 9)),
    )
    .expect("valid entry")
}

fn context(
    primary: Option<u32>,
    surfaces: Vec<SurfaceEntry>,
) -> Result<SurfaceContext, SurfaceContextError> {
    SurfaceContext::new(
        ContextId::new("ctx_1").expect("valid"),
        4,
        TurnId::new("turn_1").expect("valid"),
        ProviderRequestId::new("req_011CS").expect("valid"),
        primary.map(SurfaceKey::from_index),
        surfaces,
    )
}

#[test]
fn resolves_keys_aliases_and_the_primary() {
    let ctx = context(
        Some(1),
        vec![
            entry(
                1,
                &["right", "focused", "web:1"],
                vec![Capability::Observe, Capability::Interact],
            ),
            entry(2, &["web:2"], vec![Capability::Observe]),
        ],
    )
    .expect("valid context");
    let key_of = |name: Option<&str>| {
        let name = name.map(|n| SurfaceName::new(n).expect("valid"));
        ctx.resolve(name.as_ref())
            .map(|s| s.surface_key().as_str().to_owned())
    };
    assert_eq!(key_of(None).as_deref(), Ok("s1"));
    assert_eq!(key_of(Some("right")).as_deref(), Ok("s1"));
    assert_eq!(key_of(Some("web:2")).as_deref(), Ok("s2"));
    assert_eq!(key_of(Some("s2")).as_deref(), Ok("s2"));
    assert_eq!(
        key_of(Some("left")).map_err(|e| e.code()),
        Err(ErrorCode::UnknownSurface)
    );
    assert_eq!(
        key_of(Some("s9")).map_err(|e| e.code()),
        Err(ErrorCode::UnknownSurface)
    );
    let names: Vec<String> = ctx
        .selectable_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    assert_eq!(names, ["s1", "s2", "right", "focused", "web:1", "web:2"]);
    insta::assert_json_snapshot!("surface_context", ctx);
}

#[test]
fn no_primary_is_ambiguous() {
    let ctx = context(
        None,
        vec![
            entry(1, &[], vec![Capability::Observe]),
            entry(2, &[], vec![Capability::Observe]),
        ],
    )
    .expect("valid");
    assert_eq!(
        ctx.resolve(None).map_err(|e| e.code()).map(|_| ()),
        Err(ErrorCode::AmbiguousSurface)
    );
}

#[test]
fn construction_rules() {
    let no_observe = SurfaceEntry::new(
        SurfaceKey::from_index(1),
        vec![],
        SurfaceKind::WebTab,
        None,
        vec![Capability::Interact],
        None,
    );
    assert!(matches!(
        no_observe,
        Err(SurfaceContextError::CapabilityWithoutObserve(_))
    ));
    let dup = context(
        None,
        vec![entry(1, &["right"], vec![]), entry(2, &["right"], vec![])],
    );
    assert!(matches!(dup, Err(SurfaceContextError::DuplicateAlias(_))));
    let dup_key = context(None, vec![entry(1, &[], vec![]), entry(1, &[], vec![])]);
    assert!(matches!(dup_key, Err(SurfaceContextError::DuplicateKey(_))));
    let bad_primary = context(Some(3), vec![entry(1, &[], vec![])]);
    assert!(matches!(
        bad_primary,
        Err(SurfaceContextError::UnknownPrimary(_))
    ));
    // A surface without observe is listed but cannot be selected.
    let ctx = context(None, vec![entry(1, &["right"], vec![])]).expect("valid");
    assert!(ctx.selectable_names().is_empty());
}

#[test]
fn aliases_never_look_like_keys() {
    assert!(SurfaceAlias::new("s2").is_err());
    assert!(SurfaceAlias::new("web:1").is_ok());
    assert!(SurfaceAlias::new("Right").is_err());
    assert!(matches!(SurfaceName::new("s1"), Ok(SurfaceName::Key(_))));
    assert!(matches!(
        SurfaceName::new("focused"),
        Ok(SurfaceName::Alias(_))
    ));
}

//! Field classification table.

use policy::{FieldFacts, SecretKind, Sensitivity, classify_field, redact_value_for_field};

use SecretKind::*;

const PUBLIC: Sensitivity = Sensitivity::Public;

fn secret(kind: SecretKind) -> Sensitivity {
    Sensitivity::Secret(kind)
}

fn check(facts: FieldFacts<'_>, expected: Sensitivity) {
    assert_eq!(classify_field(&facts), expected, "facts {facts:?}");
}

fn input(input_type: &'static str) -> FieldFacts<'static> {
    FieldFacts {
        tag: Some("input"),
        input_type: Some(input_type),
        ..FieldFacts::default()
    }
}

fn named(name: &'static str) -> FieldFacts<'static> {
    FieldFacts {
        name: Some(name),
        ..input("text")
    }
}

#[test]
fn classification_table() {
    // Input type and autocomplete.
    check(input("password"), secret(Password));
    check(input("PASSWORD"), secret(Password));
    check(
        FieldFacts {
            autocomplete: Some("current-password"),
            ..input("text")
        },
        secret(Password),
    );
    check(
        FieldFacts {
            autocomplete: Some("section-login new-password"),
            ..input("text")
        },
        secret(Password),
    );
    check(
        FieldFacts {
            autocomplete: Some("one-time-code"),
            ..input("text")
        },
        secret(OneTimeCode),
    );
    check(
        FieldFacts {
            autocomplete: Some("shipping cc-number"),
            ..input("text")
        },
        secret(CreditCard),
    );
    check(
        FieldFacts {
            autocomplete: Some("CC-CSC"),
            ..input("password")
        },
        secret(CreditCard),
    );
    check(
        FieldFacts {
            autocomplete: Some("cc-exp-month"),
            tag: Some("select"),
            ..FieldFacts::default()
        },
        secret(CreditCard),
    );
    check(
        FieldFacts {
            autocomplete: Some("username"),
            ..input("text")
        },
        PUBLIC,
    );
    check(
        FieldFacts {
            autocomplete: Some("off"),
            ..input("text")
        },
        PUBLIC,
    );
    // Type password keeps the more specific kind its name gives.
    check(
        FieldFacts {
            name: Some("cvv"),
            ..input("password")
        },
        secret(CreditCard),
    );
    check(
        FieldFacts {
            name: Some("api_key"),
            ..input("password")
        },
        secret(Token),
    );
    // A page cannot make a password field public by calling it a button.
    check(
        FieldFacts {
            role: Some("button"),
            ..input("password")
        },
        secret(Password),
    );
    // Names and ids.
    check(named("cardnumber"), secret(CreditCard));
    check(named("card_number"), secret(CreditCard));
    check(named("cc-number"), secret(CreditCard));
    check(named("cardNumber"), secret(CreditCard));
    check(named("cvc"), secret(CreditCard));
    check(named("CVV2"), secret(CreditCard));
    check(named("otp"), secret(OneTimeCode));
    check(named("totp_code"), secret(OneTimeCode));
    check(named("2fa"), secret(OneTimeCode));
    check(named("twoFactorCode"), secret(OneTimeCode));
    check(named("user_password2"), secret(Password));
    check(named("passwd"), secret(Password));
    check(named("accessToken"), secret(Token));
    check(named("api-key"), secret(Token));
    check(named("APIKey"), secret(Token));
    check(named("client_secret"), secret(Token));
    check(named("aws_access_key_id"), secret(Token));
    check(named("private_key"), secret(Token));
    check(named("sessionId"), secret(Token));
    check(named("auth"), secret(Token));
    check(named("bearer"), secret(Token));
    check(
        FieldFacts {
            tag: Some("input"),
            input_type: Some("hidden"),
            name: Some("csrfmiddlewaretoken"),
            ..FieldFacts::default()
        },
        secret(Token),
    );
    check(
        FieldFacts {
            id: Some("authenticity_token"),
            ..input("hidden")
        },
        secret(Token),
    );
    // Labels, aria labels, placeholders, other languages.
    check(
        FieldFacts {
            label: Some("Card number"),
            ..input("text")
        },
        secret(CreditCard),
    );
    check(
        FieldFacts {
            aria_label: Some("Security code"),
            ..input("tel")
        },
        secret(CreditCard),
    );
    check(
        FieldFacts {
            placeholder: Some("Enter your one-time code"),
            ..input("text")
        },
        secret(OneTimeCode),
    );
    check(
        FieldFacts {
            label: Some("Verification code"),
            ..input("text")
        },
        secret(OneTimeCode),
    );
    check(
        FieldFacts {
            label: Some("Passwort"),
            ..input("text")
        },
        secret(Password),
    );
    check(
        FieldFacts {
            label: Some("请输入密码"),
            ..input("text")
        },
        secret(Password),
    );
    check(
        FieldFacts {
            label: Some("短信验证码"),
            ..input("text")
        },
        secret(OneTimeCode),
    );
    check(
        FieldFacts {
            aria_label: Some("パスワード"),
            tag: Some("div"),
            role: Some("textbox"),
            ..FieldFacts::default()
        },
        secret(Password),
    );
    // Public: whole-word matching, no-text controls, ordinary fields.
    check(named("monkey"), PUBLIC);
    check(named("keyboard_layout"), PUBLIC);
    check(named("author"), PUBLIC);
    check(named("passport_number"), PUBLIC);
    check(named("bypass_cache"), PUBLIC);
    check(named("tokenizer_settings"), PUBLIC);
    check(named("max_tokens"), PUBLIC);
    check(named("cc"), PUBLIC);
    check(named("username"), PUBLIC);
    check(named("email"), PUBLIC);
    check(
        FieldFacts {
            label: Some("Search"),
            ..input("search")
        },
        PUBLIC,
    );
    check(
        FieldFacts {
            name: Some("remember_password"),
            ..input("checkbox")
        },
        PUBLIC,
    );
    check(
        FieldFacts {
            name: Some("auth"),
            ..input("submit")
        },
        PUBLIC,
    );
    check(
        FieldFacts {
            tag: Some("button"),
            name: Some("session"),
            ..FieldFacts::default()
        },
        PUBLIC,
    );
    check(FieldFacts::default(), PUBLIC);
}

#[test]
fn values_are_redacted_only_for_secrets() {
    assert_eq!(
        redact_value_for_field("hunter2", secret(Password)),
        "[redacted]"
    );
    assert_eq!(redact_value_for_field("  ", secret(Token)), "[redacted]");
    assert_eq!(redact_value_for_field("", secret(Password)), "");
    assert_eq!(
        redact_value_for_field("  two  spaces \n", PUBLIC),
        "  two  spaces \n"
    );
}

#[test]
fn sensitivity_serialises_for_events() {
    assert_eq!(
        serde_json::to_string(&secret(OneTimeCode)).unwrap(),
        r#"{"secret":"one_time_code"}"#
    );
    assert_eq!(serde_json::to_string(&PUBLIC).unwrap(), r#""public""#);
    assert!(secret(Token).is_secret() && !PUBLIC.is_secret());
}

//! Tests of `lore_server::commands::output`, how a command speaks.

use lore_server::commands::output::{error_body, fail};

#[test]
fn a_coded_failure_keeps_its_code_through_context_and_others_are_internal() {
    let missing = fail(engine::Error::NotAnswerable(vec!["provider: no generation target".into()]));
    assert_eq!(
        missing.to_string(),
        "Lore cannot answer yet; details.reasons says what is missing. [not_answerable]\n  - provider: no generation target"
    );
    let wrapped = missing.context("asking");
    let body = error_body(&wrapped);
    assert_eq!(body.error.code, "not_answerable");
    assert_eq!(body.error.reasons(), ["provider: no generation target"]);

    let plain = anyhow::anyhow!("no such file").context("reading lore.toml");
    let body = error_body(&plain);
    assert_eq!(
        (body.error.code.as_str(), body.error.message.as_str()),
        ("internal", "reading lore.toml: no such file")
    );
}

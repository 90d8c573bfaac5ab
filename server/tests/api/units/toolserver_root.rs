//! Tests of `lore_toolserver`'s root module: operation filters and audit redaction.

use engine::settings::McpOperationsSettings;
use lore_toolserver::{glob, offered, secret_like};

#[test]
fn globs_match_as_operators_write_them() {
    assert!(glob("describe_*", "describe_all"));
    assert!(glob("*", "anything"));
    assert!(glob("search_*_id", "search_by_id"));
    assert!(!glob("search_*_id", "search_by_value"));
    assert!(!glob("describe_*", "drop_table"));
    assert!(glob("read_log", "read_log") && !glob("read_log", "read_logs"));
}

#[test]
fn the_default_allow_list_is_specs_and_get_star_is_no_wildcard() {
    let defaults = McpOperationsSettings::default();
    for name in ["describe_all", "list_users", "search_by_id", "get_job", "read_log", "system_information"] {
        assert!(offered(&defaults, name), "{name}");
    }
    for name in ["get_configuration", "insert", "drop_table", "set_configuration", "restart"] {
        assert!(!offered(&defaults, name), "{name}");
    }
    let star = McpOperationsSettings { allow: vec!["get_*".into()], ..defaults.clone() };
    assert!(offered(&star, "get_status"));
    assert!(!offered(&star, "get_configuration"), "get_* does not reach the excluded get_ operations");
    let named = McpOperationsSettings { allow: vec!["get_configuration".into()], ..defaults.clone() };
    assert!(offered(&named, "get_configuration"), "an operator opts one in by name");
    let denied = McpOperationsSettings { deny: vec!["read_*".into()], ..defaults };
    assert!(!offered(&denied, "read_log") && offered(&denied, "describe_all"));
}

#[test]
fn secret_looking_argument_names_are_recognised() {
    for name in ["password", "api_key", "apiKey", "client_secret", "Authorization", "token"] {
        assert!(secret_like(name), "{name}");
    }
    for name in ["name", "breed", "age", "id"] {
        assert!(!secret_like(name), "{name}");
    }
}

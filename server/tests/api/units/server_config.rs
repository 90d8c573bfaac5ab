//! Tests of `lore_server::config`, the layered configuration.

// figment's Jail hands tests its own (large) error type.
#![allow(clippy::result_large_err)]

use std::path::Path;

use figment::Jail;
use lore_server::config::{ignored_env_vars, load};

#[test]
fn defaults_load_with_no_file_and_no_environment() {
    Jail::expect_with(|_jail| {
        let settings = load(None).expect("defaults load");
        assert_eq!(settings.server.bind.to_string(), "127.0.0.1:3000");
        assert_eq!(settings.data_dir, std::path::PathBuf::from("./data"));
        assert_eq!(settings.database_url(), "sqlite://./data/lore.db?mode=rwc");
        assert_eq!(settings.mcp.session.idle_timeout_seconds, 1800);
        assert!(!settings.mcp.session.allow_client_delete);
        assert!(!settings.ingest.allow_private_addresses);
        Ok(())
    });
}

#[test]
fn the_file_then_the_environment_override_defaults() {
    Jail::expect_with(|jail| {
        jail.create_file(
            "lore.toml",
            r#"
            data_dir = "/var/lib/lore"
            [server]
            bind = "127.0.0.1:4000"
            [auth]
            admins = ["file@example.test"]
            [mcp.session]
            idleTimeoutSeconds = 60
            "#,
        )?;
        jail.set_env("LORE_SERVER__BIND", "127.0.0.1:5000");
        jail.set_env("LORE_DATABASE__URL", "postgres://postgres@127.0.0.1/test");
        jail.set_env("LORE_AUTH__ADMINS", "a@example.test, b@example.test");
        jail.set_env("LORE_MCP__SESSION__ALLOWCLIENTDELETE", "true");
        jail.set_env("LORE_INGEST__ALLOW_PRIVATE_ADDRESSES", "true");
        jail.set_env("LORE_PROVIDERS__PROBE_MAX_AGE_DAYS", "3");
        jail.set_env("LORE_ANSWER__GROUNDING_MIN_SUPPORT", "0.75");
        jail.set_env("LORE_METRICS__ENABLED", "true");
        jail.set_env("LORE_UNRELATED_THING", "ignored");
        jail.set_env("LORE_PROVIDERS__OPENAI_KEY", "sk-not-a-setting");
        let settings = load(None).expect("layered settings load");
        assert_eq!(settings.server.bind.to_string(), "127.0.0.1:5000");
        assert_eq!(settings.data_dir, std::path::PathBuf::from("/var/lib/lore"));
        assert_eq!(settings.database_url(), "postgres://postgres@127.0.0.1/test");
        assert_eq!(settings.auth.admins, vec!["a@example.test", "b@example.test"]);
        assert_eq!(settings.mcp.session.idle_timeout_seconds, 60);
        assert!(settings.mcp.session.allow_client_delete);
        assert!(settings.ingest.allow_private_addresses);
        assert_eq!(settings.providers.probe_max_age_days, 3);
        assert_eq!(settings.answer.grounding_min_support, 0.75);
        assert!(settings.metrics.enabled);
        let ignored = ignored_env_vars();
        assert!(ignored.contains(&"LORE_UNRELATED_THING".to_owned()), "{ignored:?}");
        assert!(ignored.contains(&"LORE_PROVIDERS__OPENAI_KEY".to_owned()), "{ignored:?}");
        let set = [
            "LORE_METRICS__ENABLED",
            "LORE_ANSWER__GROUNDING_MIN_SUPPORT",
            "LORE_PROVIDERS__PROBE_MAX_AGE_DAYS",
        ];
        assert!(!ignored.iter().any(|v| set.contains(&v.as_str())), "{ignored:?}");
        Ok(())
    });
}

#[test]
fn object_store_options_come_from_the_file_and_the_environment() {
    Jail::expect_with(|jail| {
        jail.create_file(
            "lore.toml",
            r#"
            [vectors]
            uri = "s3://lore-vectors/prod"
            storage_options = { aws_region = "eu-west-1", allow_http = "false" }
            "#,
        )?;
        jail.set_env("LORE_VECTORS__STORAGE_OPTIONS__AWS_ENDPOINT", "http://127.0.0.1:9000");
        jail.set_env("LORE_VECTORS__STORAGE_OPTIONS__ALLOW_HTTP", "true");
        let at = load(None).expect("settings load").vectors();
        assert_eq!(at.uri, "s3://lore-vectors/prod");
        assert_eq!(at.options["aws_region"], "eu-west-1");
        assert_eq!(at.options["aws_endpoint"], "http://127.0.0.1:9000");
        assert_eq!(at.options["allow_http"], "true", "the environment wins over the file");
        assert!(!ignored_env_vars().iter().any(|name| name.starts_with("LORE_VECTORS")));
        Ok(())
    });
}

#[test]
fn a_typo_in_the_file_is_a_clear_error() {
    Jail::expect_with(|jail| {
        jail.create_file("lore.toml", "[server]\nbnid = \"127.0.0.1:1\"\n")?;
        let err = format!("{:#}", load(None).unwrap_err());
        assert!(err.contains("bnid"), "{err}");
        Ok(())
    });
}

#[test]
fn a_missing_explicit_file_is_an_error() {
    let err = load(Some(Path::new("/nonexistent/lore.toml"))).unwrap_err();
    assert!(err.to_string().contains("does not exist"));
}

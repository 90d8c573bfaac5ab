//! Layered configuration: compiled defaults → `lore.toml` (or `--config PATH`)
//! → `LORE_<SECTION>__<KEY>` environment variables.

use std::path::Path;

use anyhow::Context;
use engine::Settings;
use figment::providers::{Env, Format, Toml};
use figment::Figment;

/// The default configuration file, read when it exists.
pub const DEFAULT_FILE: &str = "lore.toml";

/// Top-level keys an environment variable may set: every top-level key of
/// [`Settings`], read off its serialised defaults so that a new section is
/// settable from the environment the day it exists (a hand-kept list once
/// left `providers`, `answer` and `metrics` out). Other `LORE_*` variables
/// are ignored (with a warning) rather than failing the start.
static ENV_SECTIONS: std::sync::LazyLock<Vec<String>> =
    std::sync::LazyLock::new(|| match serde_json::to_value(Settings::default()) {
        Ok(serde_json::Value::Object(map)) => map.into_iter().map(|(key, _)| key).collect(),
        _ => Vec::new(),
    });

/// Loads the settings. A file named with `--config` must exist.
pub fn load(path: Option<&Path>) -> anyhow::Result<Settings> {
    let mut figment = Figment::new();
    match path {
        Some(path) => {
            anyhow::ensure!(path.is_file(), "configuration file {} does not exist", path.display());
            figment = figment.merge(Toml::file(path));
        }
        None => figment = figment.merge(Toml::file(DEFAULT_FILE)),
    }
    figment = figment.merge(Env::prefixed("LORE_").filter(|key| names_a_setting(key.as_str())).split("__"));
    figment.extract::<Settings>().context("invalid configuration")
}

/// Whether an environment key (the part after `LORE_`, any case) names a
/// setting: its first `__`-separated part is a top-level key.
fn names_a_setting(key: &str) -> bool {
    let section = key.split("__").next().unwrap_or_default().to_ascii_lowercase();
    ENV_SECTIONS.contains(&section)
}

/// Environment variables that look like Lore's but set nothing (likely typos).
pub fn ignored_env_vars() -> Vec<String> {
    std::env::vars()
        .map(|(name, _)| name)
        .filter(|name| name.strip_prefix("LORE_").is_some_and(|key| !names_a_setting(key)))
        .collect()
}

/// The effective configuration for `lore config`: JSON, or `key = value` lines.
pub fn render(settings: &Settings, json: bool) -> String {
    let view = settings.effective_view();
    if json {
        return serde_json::to_string_pretty(&view).unwrap_or_default();
    }
    let mut lines = Vec::new();
    flatten("", &view, &mut lines);
    lines.join("\n")
}

fn flatten(prefix: &str, value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
                flatten(&path, value, out);
            }
        }
        serde_json::Value::Null => out.push(format!("{prefix} = (unset)")),
        other => out.push(format!("{prefix} = {other}")),
    }
}

#[cfg(test)]
// figment's Jail hands tests its own (large) error type.
#[allow(clippy::result_large_err)]
mod tests {
    use super::*;
    use figment::Jail;

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
            assert!(!ignored.iter().any(|v| v.starts_with("LORE_METRICS") || v.starts_with("LORE_ANSWER")));
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
}

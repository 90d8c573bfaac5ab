//! Layered configuration: compiled defaults → `lore.toml` (or `--config PATH`)
//! → `LORE_<SECTION>__<KEY>` environment variables.

use std::path::Path;

use anyhow::Context;
use engine::Settings;
use figment::providers::{Env, Format, Toml};
use figment::Figment;

/// The default configuration file, read when it exists.
pub const DEFAULT_FILE: &str = "lore.toml";

/// The settings' defaults, serialised: what an environment variable may
/// set is read off them, so a new section or key is settable from the
/// environment the day it exists (a hand-kept list of sections once left
/// `providers`, `answer` and `metrics` out).
static DEFAULTS: std::sync::LazyLock<serde_json::Value> =
    std::sync::LazyLock::new(|| serde_json::to_value(Settings::default()).unwrap_or_default());

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
    let env = || Env::prefixed("LORE_").filter(|key| names_a_setting(key.as_str())).split("__");
    let settings: Settings = figment.clone().merge(env()).extract().context("invalid configuration")?;
    // What `set_configuration` saved in the data directory sits above the
    // file and below the environment.
    let overlay = engine::settings::overlay_path(&settings.data_dir);
    if !overlay.is_file() {
        return Ok(settings);
    }
    let text = std::fs::read_to_string(&overlay).with_context(|| format!("reading {}", overlay.display()))?;
    let saved: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", overlay.display()))?;
    figment
        .merge(figment::providers::Serialized::defaults(saved))
        .merge(env())
        .extract::<Settings>()
        .with_context(|| format!("invalid configuration (with {})", overlay.display()))
}

/// Whether an environment key (the part after `LORE_`, any case) names a
/// setting: its first `__`-separated part is a top-level key and its second,
/// if any, a key of that section.
fn names_a_setting(key: &str) -> bool {
    let mut parts = key.split("__").map(str::to_ascii_lowercase);
    let section = parts.next().unwrap_or_default();
    let Some(defaults) = DEFAULTS.get(section.as_str()) else {
        return false;
    };
    // The key within the section must exist too: a variable such as
    // `LORE_PROVIDERS__OPENAI_KEY`, named after Lore's pattern to hold a key
    // for `--api-key-env`, is not a setting and must not stop the start.
    match (parts.next(), defaults) {
        (Some(field), serde_json::Value::Object(fields)) => {
            fields.keys().any(|known| known.eq_ignore_ascii_case(&field))
        }
        _ => true,
    }
}

/// Environment variables that look like Lore's but set nothing (likely
/// typos, or a provider key's variable named after Lore's pattern).
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
}

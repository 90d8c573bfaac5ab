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

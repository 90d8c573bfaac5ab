//! Files of upload sources. A received file is checked (type, readable,
//! has text) before anything is stored, so a bad file changes nothing; a good
//! one is written atomically to `{data_dir}/uploads/{source}/{document}` and
//! replaces the earlier file of the same name. Runs read the stored files, so
//! a full reindex can re-chunk and re-embed them without a new upload.

use std::path::PathBuf;

use entity::document;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter};

use super::jobs::{Job, ProgressHandle};
use super::{extract_off_thread, new_document, Fetched, Indexer, IngestError, Reading};
use crate::sources::{Document, Source, SourceKind};
use crate::{Error, Lore, Result};

/// A file as received.
#[derive(Clone, Debug)]
pub struct Upload {
    pub file_name: String,
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
}

fn dir_of(lore: &Lore, source_id: &str) -> PathBuf {
    lore.settings.data_dir.join("uploads").join(source_id)
}

fn io(context: String) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Io { context, source }
}

/// Keeps only the final path component of a client-given file name.
pub fn clean_file_name(raw: &str) -> Result<String, IngestError> {
    let name = raw.rsplit(['/', '\\']).next().unwrap_or_default().trim();
    if name.is_empty() || name == "." || name == ".." || name.chars().count() > 255 {
        return Err(IngestError::InvalidSource("the file needs a name of 1 to 255 characters".into()));
    }
    Ok(name.to_owned())
}

/// Receives one file into an upload source and queues its indexing. Checks
/// everything first: on any error nothing is stored and earlier content is
/// untouched.
pub async fn receive(lore: &Lore, source_id: &str, upload: Upload) -> Result<(Document, Job)> {
    let found = crate::sources::get(lore, source_id).await?;
    if found.kind != SourceKind::Upload {
        return Err(IngestError::WrongKind {
            actual: found.kind.key().to_owned(),
            wanted: "only upload sources take files".into(),
        }
        .into());
    }
    if !found.enabled {
        return Err(IngestError::SourceDisabled.into());
    }
    let limit = lore.settings.ingest.upload_max_bytes;
    if upload.bytes.len() as u64 > limit {
        return Err(IngestError::FileTooLarge { limit_bytes: limit }.into());
    }
    let file_name = clean_file_name(&upload.file_name)?;
    let fetched = Fetched {
        uri: file_name.clone(),
        content_type: upload.content_type.clone(),
        bytes: upload.bytes,
        ..Fetched::default()
    };
    let extracted = extract_off_thread(&fetched, &file_name).await?;

    let existing = document::Entity::find()
        .filter(document::Column::SourceId.eq(source_id))
        .filter(document::Column::Uri.eq(&file_name))
        .one(&lore.db)
        .await?;
    let doc = match existing {
        Some(doc) => doc,
        None => {
            let title = extracted.title.clone().unwrap_or_else(|| file_name.clone());
            new_document(&uuid::Uuid::new_v4().to_string(), source_id, &file_name, &title, None)
                .insert(&lore.db)
                .await?
        }
    };
    store_file(lore, source_id, &doc.id, &fetched).await?;
    let job = super::lifecycle::start_run(lore, Some(source_id), false, "upload").await?;
    Ok((Document::decode(doc)?, job))
}

/// Writes the file next to its final place, then renames it over: a reader
/// sees the old file or the new one, never a part.
async fn store_file(lore: &Lore, source_id: &str, document_id: &str, fetched: &Fetched) -> Result<()> {
    let dir = dir_of(lore, source_id);
    tokio::fs::create_dir_all(&dir).await.map_err(io(format!("creating {}", dir.display())))?;
    let path = dir.join(document_id);
    let partial = dir.join(format!("{document_id}.part"));
    let meta = serde_json::json!({"content_type": fetched.content_type});
    tokio::fs::write(&partial, &fetched.bytes).await.map_err(io(format!("writing {}", partial.display())))?;
    tokio::fs::write(dir.join(format!("{document_id}.json")), meta.to_string())
        .await
        .map_err(io("writing upload metadata".into()))?;
    tokio::fs::rename(&partial, &path).await.map_err(io(format!("replacing {}", path.display())))?;
    Ok(())
}

async fn read_file(lore: &Lore, doc: &document::Model) -> Result<Fetched> {
    let dir = dir_of(lore, &doc.source_id);
    let bytes =
        tokio::fs::read(dir.join(&doc.id)).await.map_err(io(format!("reading the stored {}", doc.uri)))?;
    let content_type = tokio::fs::read_to_string(dir.join(format!("{}.json", doc.id)))
        .await
        .ok()
        .and_then(|raw| serde_json::from_str::<serde_json::Value>(&raw).ok())
        .and_then(|meta| meta.get("content_type").and_then(|v| v.as_str()).map(str::to_owned));
    Ok(Fetched { uri: doc.uri.clone(), content_type, bytes, ..Fetched::default() })
}

/// Deletes every stored file of a source.
pub async fn remove_all(lore: &Lore, source_id: &str) -> Result<()> {
    let dir = dir_of(lore, source_id);
    match tokio::fs::remove_dir_all(&dir).await {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(io(format!("removing {}", dir.display()))(err)),
    }
}

/// Indexes every stored file of an upload source.
pub async fn sync(
    indexer: &Indexer,
    found: &Source,
    progress: &ProgressHandle,
    cancel: tokio::sync::watch::Receiver<bool>,
) -> Result<()> {
    let docs = document::Entity::find()
        .filter(document::Column::SourceId.eq(&found.id))
        .all(&indexer.lore.db)
        .await?;
    progress.add(|p| p.discovered += docs.len() as u64);
    for doc in docs {
        if *cancel.borrow() {
            break;
        }
        let fetched = match read_file(&indexer.lore, &doc).await {
            Ok(fetched) => fetched,
            Err(err) => {
                indexer.record_failure(&found.id, &doc.uri, None, &err.to_string()).await?;
                progress.error(&doc.uri, &err.to_string());
                continue;
            }
        };
        progress.add(|p| p.fetched += 1);
        let extracted = match indexer.read(&found.id, &fetched, &doc.uri).await? {
            Reading::Quarantined(reason) => {
                progress.error(&doc.uri, &reason);
                continue;
            }
            Reading::Extracted(extracted) => extracted,
        };
        let outcome = match extracted {
            Ok(extracted) => {
                progress.add(|p| p.extracted += 1);
                indexer.index_document(&found.id, &fetched, &extracted, progress).await
            }
            Err(err) => Err(err.into()),
        };
        match outcome {
            Ok(outcome) => outcome.count(progress),
            Err(err @ (Error::Ingest(_) | Error::Embedding(_))) => {
                indexer.record_failure(&found.id, &doc.uri, None, &err.to_string()).await?;
                progress.error(&doc.uri, &err.to_string());
            }
            Err(other) => return Err(other),
        }
    }
    Ok(())
}

//! Files of upload sources. A received file is checked (type, readable,
//! has text) before anything is stored, so a bad file changes nothing; a good
//! one is stored in the database (`stored_upload`, one row per document,
//! replaced whole), where whichever replica claims the run can read it. Runs
//! read the stored files, so a full reindex can re-chunk and re-embed them
//! without a new upload.
//!
//! Files stored by earlier releases under `{data_dir}/uploads/{source}/
//! {document}` are still read from there until they are uploaded again.

use std::path::PathBuf;

use entity::document;
use entity::stored_upload;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, Set};

use super::jobs::{Job, ProgressHandle};
use super::{extract_off_thread, new_document, Fetched, Indexer, IngestError, Reading};
use crate::sources::{Document, Source};
use crate::{Corpus, Error, Result};

/// A file as received.
#[derive(Clone, Debug)]
pub struct Upload {
    pub file_name: String,
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
}

/// Where earlier releases kept a source's files.
fn legacy_dir(lore: &Corpus, source_id: &str) -> PathBuf {
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
pub async fn receive(lore: &Corpus, source_id: &str, upload: Upload) -> Result<(Document, Job)> {
    let found = crate::sources::get(lore, source_id).await?;
    if !found.kind.info().takes_files {
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

/// Stores the file of `document_id`, replacing the one it had, in one
/// statement: a reader sees the old file or the new one, never a part.
async fn store_file(lore: &Corpus, source_id: &str, document_id: &str, fetched: &Fetched) -> Result<()> {
    use stored_upload::Column as C;
    let row = stored_upload::ActiveModel {
        document_id: Set(document_id.to_owned()),
        source_id: Set(source_id.to_owned()),
        content_type: Set(fetched.content_type.clone()),
        size: Set(i64::try_from(fetched.bytes.len()).unwrap_or(i64::MAX)),
        bytes: Set(fetched.bytes.clone()),
        stored_at: Set(chrono::Utc::now()),
    };
    stored_upload::Entity::insert(row)
        .on_conflict(
            OnConflict::column(C::DocumentId)
                .update_columns([C::SourceId, C::ContentType, C::Size, C::Bytes, C::StoredAt])
                .to_owned(),
        )
        .exec_without_returning(&lore.db)
        .await?;
    // A file an earlier release kept on disk would otherwise outlive it.
    let legacy = legacy_dir(lore, source_id);
    for stale in [legacy.join(document_id), legacy.join(format!("{document_id}.json"))] {
        match tokio::fs::remove_file(&stale).await {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                tracing::warn!(error = %err, file = %stale.display(), "could not remove an upload's old file")
            }
            _ => {}
        }
    }
    Ok(())
}

async fn read_file(lore: &Corpus, doc: &document::Model) -> Result<Fetched> {
    if let Some(stored) = stored_upload::Entity::find_by_id(doc.id.clone()).one(&lore.db).await? {
        return Ok(Fetched {
            uri: doc.uri.clone(),
            content_type: stored.content_type,
            bytes: stored.bytes,
            ..Fetched::default()
        });
    }
    let dir = legacy_dir(lore, &doc.source_id);
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
pub async fn remove_all(lore: &Corpus, source_id: &str) -> Result<()> {
    stored_upload::Entity::delete_many()
        .filter(stored_upload::Column::SourceId.eq(source_id))
        .exec(&lore.db)
        .await?;
    let dir = legacy_dir(lore, source_id);
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

//! Admin endpoints behind the Sources screen:
//!
//! | method | path | does |
//! | --- | --- | --- |
//! | GET | /admin/sources/ | list with counts, freshness and the latest run |
//! | POST | /admin/sources/ | create (`{"name", "kind", "config"?, "volatility"?}`) |
//! | GET | /admin/sources/kinds | the kinds of source, with their forms' fields |
//! | GET | /admin/sources/{id} | one source |
//! | DELETE | /admin/sources/{id} | delete with documents, chunks and files |
//! | POST | /admin/sources/{id}/enable, /disable | the enabled switch |
//! | PUT | /admin/sources/{id}/volatility | `{"volatility"}`: how fast its content goes stale |
//! | POST | /admin/sources/{id}/files | multipart upload (field `file`, repeatable) |
//! | GET | /admin/sources/{id}/documents | documents with per-document errors |
//!
//! Runs (`sync`, reindex, one run) are in `jobs`, search in `search`, and
//! chunking in `tuning`.

use axum::extract::{Multipart, Path, State};
use axum::http::StatusCode;
use axum::Json;
use engine::ingest::{lifecycle, upload, IngestError};
use engine::{sources, Lore};

use app::wire::{
    AudienceRequest, CreateSourceRequest, DocumentView, SourceKindView, SourceView, UploadReceipt,
    VolatilityRequest,
};

use super::admin::Admin;
use super::error::ApiError;
use super::json::ApiJson;
use crate::AppState;

/// A source as the console lists it (see `ingest::lifecycle::overview`).
pub(crate) async fn source_view(lore: &Lore, source: sources::Source) -> Result<SourceView, ApiError> {
    Ok(lifecycle::overview(lore, source).await?.into())
}

pub async fn list(State(state): State<AppState>, _admin: Admin) -> Result<Json<Vec<SourceView>>, ApiError> {
    let overviews = lifecycle::overviews(&state.lore).await?;
    Ok(Json(overviews.into_iter().map(SourceView::from).collect()))
}

pub async fn create(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(new): ApiJson<CreateSourceRequest>,
) -> Result<(StatusCode, Json<SourceView>), ApiError> {
    let added =
        engine::ingest::lifecycle::add_source(&state.lore, &admin.actor(), new.into(), "admin").await?;
    Ok((StatusCode::CREATED, Json(source_view(&state.lore, added.source).await?)))
}

/// Every kind of source, as the form that creates one draws it.
pub async fn kinds(_admin: Admin) -> Json<Vec<SourceKindView>> {
    Json(sources::SourceKind::all().map(SourceKindView::from).collect())
}

pub async fn get_one(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<SourceView>, ApiError> {
    let found = sources::get(&state.lore, &id).await?;
    Ok(Json(source_view(&state.lore, found).await?))
}

pub async fn delete(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    sources::delete(&state.lore, &admin.actor(), &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn enable(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<SourceView>, ApiError> {
    let updated = sources::set_enabled(&state.lore, &admin.actor(), &id, true).await?;
    Ok(Json(source_view(&state.lore, updated).await?))
}

pub async fn disable(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<SourceView>, ApiError> {
    let updated = sources::set_enabled(&state.lore, &admin.actor(), &id, false).await?;
    Ok(Json(source_view(&state.lore, updated).await?))
}

pub async fn documents(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<Vec<DocumentView>>, ApiError> {
    let docs = sources::documents(&state.lore, &id).await?;
    Ok(Json(docs.into_iter().map(DocumentView::from).collect()))
}

/// Receives the multipart field `file` (one or more). Each file is checked
/// and stored on its own; the first bad one stops the request with its error,
/// and the files before it stay received.
pub async fn upload_files(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
    mut multipart: Multipart,
) -> Result<(StatusCode, Json<Vec<UploadReceipt>>), ApiError> {
    let lore = &state.lore;
    sources::get(lore, &id).await?;
    let limit = lore.settings.ingest.upload_max_bytes;
    let too_large =
        || ApiError::from(engine::Error::Ingest(IngestError::FileTooLarge { limit_bytes: limit }));
    let mut receipts = Vec::new();
    while let Some(mut field) = multipart.next_field().await.map_err(|err| multipart_error(err, limit))? {
        if field.name() != Some("file") {
            continue;
        }
        let file_name = field.file_name().unwrap_or_default().to_owned();
        let content_type = field.content_type().map(str::to_owned);
        let mut bytes = Vec::new();
        while let Some(piece) = field.chunk().await.map_err(|err| multipart_error(err, limit))? {
            if (bytes.len() + piece.len()) as u64 > limit {
                return Err(too_large());
            }
            bytes.extend_from_slice(&piece);
        }
        let (document, job) =
            upload::receive(lore, &id, upload::Upload { file_name, content_type, bytes }).await?;
        receipts.push(UploadReceipt { document: document.into(), job: job.into() });
    }
    if receipts.is_empty() {
        return Err(
            engine::Error::InvalidInput("send the file in a multipart field named \"file\"".into()).into()
        );
    }
    Ok((StatusCode::ACCEPTED, Json(receipts)))
}

fn multipart_error(err: axum::extract::multipart::MultipartError, limit: u64) -> ApiError {
    if err.status() == StatusCode::PAYLOAD_TOO_LARGE {
        engine::Error::Ingest(IngestError::FileTooLarge { limit_bytes: limit }).into()
    } else {
        engine::Error::InvalidInput(format!("the upload is not valid multipart data: {}", err.body_text()))
            .into()
    }
}

/// `PUT /admin/sources/{id}/audience`.
pub async fn set_audience(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<AudienceRequest>,
) -> Result<Json<SourceView>, ApiError> {
    let lore = &state.lore;
    let updated = engine::sources::set_audience(lore, &admin.actor(), &id, &request.audience).await?;
    Ok(Json(source_view(lore, updated).await?))
}

pub async fn set_volatility(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<VolatilityRequest>,
) -> Result<Json<SourceView>, ApiError> {
    let lore = &state.lore;
    let updated = engine::sources::set_volatility(lore, &admin.actor(), &id, &request.volatility).await?;
    Ok(Json(source_view(lore, updated).await?))
}

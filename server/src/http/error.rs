//! The one place where errors become HTTP: a status and a stable code per
//! variant, in one exhaustive match. Internals are logged, never returned.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use engine::auth::AuthError;
use engine::ingest::IngestError;
use engine::keys::KeyError;
use engine::profile::ProfileError;
use engine::providers::ProviderError;

use app::wire::{ErrorBody, ErrorDetail};

/// An error on its way to the client.
#[derive(Debug)]
pub enum ApiError {
    Engine(engine::Error),
    /// A cookie-authenticated mutation from another origin.
    CrossOriginRejected,
    /// The database cannot be reached or the schema is behind.
    NotReady,
    /// A JSON body that is not JSON, not of the right shape, or not declared as JSON.
    Json(axum::extract::rejection::JsonRejection),
    /// A JSON body that is valid JSON but not an object (an array, a string,
    /// a number, `true`, `false` or `null`) where every route takes an object.
    NotAnObject,
    /// `/metrics` is off (`metrics.enabled`).
    MetricsDisabled,
    /// `/metrics` is protected by `metrics.key` and the scrape did not send it.
    MetricsKeyRequired,
    /// A model provider's call failed, told to a caller outside the console
    /// (see [`ApiError::public`]).
    ProviderUnavailable,
    /// The path exists, but not with this method.
    MethodNotAllowed,
}

impl From<engine::Error> for ApiError {
    fn from(err: engine::Error) -> Self {
        ApiError::Engine(err)
    }
}

impl From<AuthError> for ApiError {
    fn from(err: AuthError) -> Self {
        ApiError::Engine(err.into())
    }
}

impl ApiError {
    /// For callers outside the console (API keys, the widget, whose key any
    /// visitor of the page can read): a failed provider call's message names
    /// the provider's address and repeats its reply, the readiness reasons
    /// name accounts, models, paths and probe errors, and a failing-closed
    /// reason names the embedding models; all of that is for the admin.
    /// Such callers get the same codes with a plain message and, for
    /// `not_answerable`, the concerns that fail (`provider`, `indexing`, ...:
    /// the key each reason starts with) without their details; the log
    /// keeps the rest. Used by `/answer` and `/retrieve`.
    pub fn public(err: engine::Error) -> Self {
        match err {
            engine::Error::Provider(ProviderError::Call(call)) => {
                tracing::warn!(error = %call, "a model provider call failed");
                ApiError::ProviderUnavailable
            }
            engine::Error::NotAnswerable(reasons) => {
                let concerns = reasons
                    .iter()
                    .map(|reason| reason.split_once(": ").map_or(reason.as_str(), |(concern, _)| concern))
                    .map(str::to_owned)
                    .collect();
                ApiError::Engine(engine::Error::NotAnswerable(concerns))
            }
            // The reason names the embedding models: the admin's to read.
            engine::Error::RetrievalFailingClosed(why) => {
                tracing::warn!(reason = %why, "retrieval is failing closed");
                ApiError::Engine(engine::Error::RetrievalFailingClosed(
                    "the index must be rebuilt before Lore can search it".into(),
                ))
            }
            // Each of these is the caller's to read as it is (its message is
            // about the request, or the 5xx mapping already hides it). A new
            // variant must be placed here or above: no wildcard.
            other @ (engine::Error::Auth(_)
            | engine::Error::Config(_)
            | engine::Error::Embedding(_)
            | engine::Error::Ingest(_)
            | engine::Error::Key(_)
            | engine::Error::Provider(
                ProviderError::Invalid(_)
                | ProviderError::AccountNotFound(_)
                | ProviderError::TargetNotFound(_)
                | ProviderError::TargetNotReady { .. }
                | ProviderError::ProbeFailed { .. },
            )
            | engine::Error::Profile(_)
            | engine::Error::InvalidInput(_)
            | engine::Error::Database(_)
            | engine::Error::Io { .. }
            | engine::Error::Internal(_)) => ApiError::Engine(other),
        }
    }

    /// Status, stable code, and the message the client may see.
    pub fn parts(&self) -> (StatusCode, &'static str, String) {
        use engine::Error as E;
        match self {
            ApiError::Engine(E::Auth(auth)) => {
                let (status, code) = match auth {
                    AuthError::Unauthenticated => (StatusCode::UNAUTHORIZED, "unauthenticated"),
                    AuthError::AdminUnavailable => (StatusCode::FORBIDDEN, "admin_unavailable"),
                    AuthError::BootstrapLinkInvalid => (StatusCode::FORBIDDEN, "bootstrap_link_invalid"),
                    AuthError::BootstrapNotLoopback => (StatusCode::FORBIDDEN, "bootstrap_not_loopback"),
                    AuthError::BootstrapDisabled => (StatusCode::NOT_FOUND, "bootstrap_disabled"),
                    AuthError::OidcNotConfigured => (StatusCode::NOT_FOUND, "oidc_not_configured"),
                    AuthError::SignInFailed(_) => (StatusCode::UNAUTHORIZED, "sign_in_failed"),
                    AuthError::IdentityProviderUnavailable(_) => {
                        (StatusCode::SERVICE_UNAVAILABLE, "identity_provider_unavailable")
                    }
                };
                // Sign-in failure details can name provider internals: log them, say less.
                let message = match auth {
                    AuthError::SignInFailed(_) => "Sign-in did not complete; please try again.".to_owned(),
                    AuthError::IdentityProviderUnavailable(_) => {
                        "The identity provider could not be reached.".to_owned()
                    }
                    other => capitalise(&other.to_string()),
                };
                (status, code, message)
            }
            ApiError::Engine(E::Config(_)) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "configuration_invalid",
                "Lore's configuration is invalid.".into(),
            ),
            ApiError::Engine(E::Embedding(_)) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "embedding_unavailable",
                "The embedding model is not available.".into(),
            ),
            ApiError::Engine(E::Ingest(ingest)) => ingest_parts(ingest),
            ApiError::Engine(E::Key(key)) => key_parts(key),
            ApiError::Engine(E::Provider(provider)) => provider_parts(provider),
            ApiError::Engine(E::Profile(profile)) => profile_parts(profile),
            ApiError::Engine(E::InvalidInput(message)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", capitalise(message))
            }
            ApiError::Engine(E::NotAnswerable(_)) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "not_answerable",
                "Lore cannot answer yet; details.reasons says what is missing.".into(),
            ),
            ApiError::Engine(E::RetrievalFailingClosed(why)) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "retrieval_failing_closed",
                capitalise(&format!("retrieval is failing closed: {why}")),
            ),
            ApiError::Engine(E::Database(_) | E::Io { .. } | E::Internal(_)) => {
                (StatusCode::INTERNAL_SERVER_ERROR, "internal", "Something went wrong on our side.".into())
            }
            ApiError::CrossOriginRejected => (
                StatusCode::FORBIDDEN,
                "cross_origin_rejected",
                "This request came from another site and was refused.".into(),
            ),
            ApiError::Json(rejection) => {
                use axum::extract::rejection::JsonRejection as R;
                let (status, code) = match rejection {
                    R::JsonDataError(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_input"),
                    R::JsonSyntaxError(_) => (StatusCode::BAD_REQUEST, "malformed_json"),
                    R::MissingJsonContentType(_) => {
                        (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")
                    }
                    // Over the body limit: axum says 413, and so do we.
                    other if other.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                        (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")
                    }
                    _ => (StatusCode::BAD_REQUEST, "bad_request"),
                };
                (status, code, rejection.body_text())
            }
            // A shape error, as a wrong field type is: the same status and code.
            ApiError::NotAnObject => {
                (StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", "The body must be a JSON object.".into())
            }
            ApiError::NotReady => {
                (StatusCode::SERVICE_UNAVAILABLE, "not_ready", "Lore is not ready to serve.".into())
            }
            ApiError::MetricsDisabled => (
                StatusCode::NOT_FOUND,
                "metrics_disabled",
                "Metrics are off; set metrics.enabled to serve them.".into(),
            ),
            ApiError::ProviderUnavailable => (
                StatusCode::BAD_GATEWAY,
                "provider_unavailable",
                "The model provider did not answer; please try again later.".into(),
            ),
            ApiError::MethodNotAllowed => (
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "This path does not take this method.".into(),
            ),
            ApiError::MetricsKeyRequired => (
                StatusCode::UNAUTHORIZED,
                "metrics_key_required",
                "Send the metrics key as `Authorization: Bearer <key>`.".into(),
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code, message) = self.parts();
        if status.is_server_error()
            || matches!(&self, ApiError::Engine(engine::Error::Auth(AuthError::SignInFailed(_))))
        {
            tracing::warn!(code, error = ?self, "request failed");
        }
        let body =
            ErrorBody { error: ErrorDetail { code: code.to_owned(), message, details: self.details() } };
        (status, Json(body)).into_response()
    }
}

impl ApiError {
    /// Machine-readable details where the code alone is not enough.
    pub fn details(&self) -> Option<serde_json::Value> {
        use engine::providers::ProviderError;
        match self {
            ApiError::Engine(engine::Error::Provider(ProviderError::TargetNotReady {
                role,
                state,
                reason,
                ..
            })) => Some(serde_json::json!({"role": role, "state": state.key(), "reason": reason})),
            ApiError::Engine(engine::Error::Profile(ProfileError::VersionConflict { base, active })) => {
                Some(serde_json::json!({"base_version": base, "active_version": active}))
            }
            ApiError::Engine(engine::Error::NotAnswerable(reasons)) => {
                Some(serde_json::json!({"reasons": reasons}))
            }
            _ => None,
        }
    }
}

fn key_parts(err: &KeyError) -> (StatusCode, &'static str, String) {
    let (status, code) = match err {
        KeyError::Missing => (StatusCode::UNAUTHORIZED, "missing_api_key"),
        KeyError::Unknown => (StatusCode::UNAUTHORIZED, "invalid_api_key"),
        KeyError::Revoked => (StatusCode::UNAUTHORIZED, "key_revoked"),
        KeyError::Scope(_) => (StatusCode::FORBIDDEN, "insufficient_scope"),
        KeyError::Origin(_) => (StatusCode::FORBIDDEN, "origin_not_allowed"),
        KeyError::RateLimited(_) => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
        KeyError::Invalid(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_key_request"),
        KeyError::NotFound(_) => (StatusCode::NOT_FOUND, "key_not_found"),
    };
    (status, code, capitalise(&err.to_string()))
}

fn provider_parts(err: &ProviderError) -> (StatusCode, &'static str, String) {
    let (status, code) = match err {
        ProviderError::Invalid(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_provider"),
        ProviderError::AccountNotFound(_) => (StatusCode::NOT_FOUND, "provider_not_found"),
        ProviderError::TargetNotFound(_) => (StatusCode::NOT_FOUND, "target_not_found"),
        ProviderError::TargetNotReady { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "target_not_ready"),
        ProviderError::ProbeFailed { .. } => (StatusCode::BAD_GATEWAY, "probe_failed"),
        ProviderError::Call(_) => (StatusCode::BAD_GATEWAY, "provider_unavailable"),
    };
    (status, code, capitalise(&err.to_string()))
}

fn profile_parts(err: &ProfileError) -> (StatusCode, &'static str, String) {
    let (status, code) = match err {
        ProfileError::VersionConflict { .. } => (StatusCode::CONFLICT, "profile_version_conflict"),
        ProfileError::NoProfile => (StatusCode::NOT_FOUND, "profile_not_found"),
        ProfileError::UnknownVersion(_) => (StatusCode::NOT_FOUND, "profile_version_not_found"),
        ProfileError::UnknownPersona(_) => (StatusCode::UNPROCESSABLE_ENTITY, "unknown_persona"),
        ProfileError::Invalid(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_profile"),
    };
    (status, code, capitalise(&err.to_string()))
}

fn ingest_parts(err: &IngestError) -> (StatusCode, &'static str, String) {
    let (status, code) = match err {
        IngestError::InvalidSource(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_source"),
        IngestError::KindUnavailable(_) => (StatusCode::UNPROCESSABLE_ENTITY, "source_kind_unavailable"),
        IngestError::SourceNotFound(_) => (StatusCode::NOT_FOUND, "source_not_found"),
        IngestError::JobNotFound(_) => (StatusCode::NOT_FOUND, "job_not_found"),
        IngestError::SourceDisabled => (StatusCode::CONFLICT, "source_disabled"),
        IngestError::WrongKind { .. } => (StatusCode::CONFLICT, "source_kind_mismatch"),
        IngestError::UnsupportedFile(_) => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_file_type"),
        IngestError::CorruptFile(_) => (StatusCode::UNPROCESSABLE_ENTITY, "corrupt_file"),
        IngestError::EmptyFile => (StatusCode::UNPROCESSABLE_ENTITY, "empty_file"),
        IngestError::DocumentOverLimit(_) => (StatusCode::UNPROCESSABLE_ENTITY, "document_over_limit"),
        IngestError::FileTooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "file_too_large"),
        IngestError::PrivateAddress(_) => (StatusCode::UNPROCESSABLE_ENTITY, "private_address_refused"),
        IngestError::Fetch(_) => (StatusCode::BAD_GATEWAY, "fetch_failed"),
        IngestError::ReindexAcknowledgementRequired => {
            (StatusCode::CONFLICT, "reindex_acknowledgement_required")
        }
        IngestError::InvalidTuning(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_tuning"),
        IngestError::Index(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
    };
    let message = match err {
        IngestError::Index(_) => "Something went wrong on our side.".to_owned(),
        other => capitalise(&other.to_string()),
    };
    (status, code, message)
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect::<String>() + ".",
        None => String::new(),
    }
}

//! The one place where errors become HTTP: a status and a stable code per
//! variant, in one exhaustive match. Internals are logged, never returned.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use engine::appdb::AppDbError;
use engine::auth::AuthError;
use engine::ingest::git::GitProblem;
use engine::ingest::IngestError;
use engine::keys::KeyError;
use engine::profile::ProfileError;
use engine::providers::ProviderError;

use app::wire::{ErrorBody, ErrorDetail};

use super::codes::{self, Code};

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
    /// A CORS preflight from an origin no active widget key lists (or with
    /// no origin at all).
    PreflightRefused(Option<String>),
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
            | engine::Error::AppDb(_)
            | engine::Error::Config(_)
            | engine::Error::Embedding(_)
            | engine::Error::Ingest(_)
            | engine::Error::Key(_)
            | engine::Error::Provider(
                ProviderError::Invalid(_)
                | ProviderError::AccountNotFound(_)
                | ProviderError::TargetNotFound(_)
                | ProviderError::TargetNotReady { .. }
                | ProviderError::ProbeFailed { .. }
                | ProviderError::InUse { .. },
            )
            | engine::Error::Profile(_)
            | engine::Error::InvalidInput(_)
            | engine::Error::Database(_)
            | engine::Error::Index(_)
            | engine::Error::Io { .. }
            | engine::Error::Directory { .. }
            | engine::Error::Internal(_)) => ApiError::Engine(other),
        }
    }

    /// Status, stable code, and the message the client may see.
    pub fn parts(&self) -> (StatusCode, &'static str, String) {
        let (code, message) = self.code();
        (code.status, code.key, message)
    }

    /// The stable code (with its status, from the one table) and the message.
    fn code(&self) -> (Code, String) {
        use engine::Error as E;
        match self {
            ApiError::Engine(E::Auth(auth)) => {
                let code = match auth {
                    AuthError::Unauthenticated => codes::UNAUTHENTICATED,
                    AuthError::AdminUnavailable => codes::ADMIN_UNAVAILABLE,
                    AuthError::BootstrapLinkInvalid => codes::BOOTSTRAP_LINK_INVALID,
                    AuthError::BootstrapNotLoopback => codes::BOOTSTRAP_NOT_LOOPBACK,
                    AuthError::BootstrapDisabled => codes::BOOTSTRAP_DISABLED,
                    AuthError::OidcNotConfigured => codes::OIDC_NOT_CONFIGURED,
                    AuthError::SignInFailed(_) => codes::SIGN_IN_FAILED,
                    AuthError::IdentityProviderUnavailable(_) => codes::IDENTITY_PROVIDER_UNAVAILABLE,
                };
                // Sign-in failure details can name provider internals: log them, say less.
                let message = match auth {
                    AuthError::SignInFailed(_) => "Sign-in did not complete; please try again.".to_owned(),
                    AuthError::IdentityProviderUnavailable(_) => {
                        "The identity provider could not be reached.".to_owned()
                    }
                    other => capitalise(&other.to_string()),
                };
                (code, message)
            }
            ApiError::Engine(E::Config(_)) => {
                (codes::CONFIGURATION_INVALID, "Lore's configuration is invalid.".into())
            }
            ApiError::Engine(E::Embedding(_)) => {
                (codes::EMBEDDING_UNAVAILABLE, "The embedding model is not available.".into())
            }
            ApiError::Engine(E::Ingest(ingest)) => ingest_parts(ingest),
            ApiError::Engine(E::Key(key)) => key_parts(key),
            ApiError::Engine(E::AppDb(appdb)) => appdb_parts(appdb),
            ApiError::Engine(E::Provider(provider)) => provider_parts(provider),
            ApiError::Engine(E::Profile(profile)) => profile_parts(profile),
            ApiError::Engine(E::InvalidInput(message)) => (codes::INVALID_INPUT, capitalise(message)),
            ApiError::Engine(E::NotAnswerable(_)) => (
                codes::NOT_ANSWERABLE,
                "Lore cannot answer yet; details.reasons says what is missing.".into(),
            ),
            ApiError::Engine(E::RetrievalFailingClosed(why)) => {
                (codes::RETRIEVAL_FAILING_CLOSED, capitalise(&format!("retrieval is failing closed: {why}")))
            }
            ApiError::Engine(E::Database(err)) if engine::store::is_busy(err) => (
                codes::BUSY,
                "The database is busy with another writer (another Lore process?); nothing was changed. Try again."
                    .into(),
            ),
            ApiError::Engine(
                E::Database(_) | E::Index(_) | E::Io { .. } | E::Directory { .. } | E::Internal(_),
            ) => (codes::INTERNAL, "Something went wrong on our side.".into()),
            ApiError::CrossOriginRejected => {
                (codes::CROSS_ORIGIN_REJECTED, "This request came from another site and was refused.".into())
            }
            ApiError::Json(rejection) => {
                use axum::extract::rejection::JsonRejection as R;
                let code = match rejection {
                    R::JsonDataError(_) => codes::INVALID_INPUT,
                    R::JsonSyntaxError(_) => codes::MALFORMED_JSON,
                    R::MissingJsonContentType(_) => codes::UNSUPPORTED_MEDIA_TYPE,
                    // Over the body limit: axum says 413, and so do we.
                    other if other.status() == StatusCode::PAYLOAD_TOO_LARGE => codes::PAYLOAD_TOO_LARGE,
                    _ => codes::BAD_REQUEST,
                };
                (code, rejection.body_text())
            }
            // A shape error, as a wrong field type is: the same status and code.
            ApiError::NotAnObject => (codes::INVALID_INPUT, "The body must be a JSON object.".into()),
            ApiError::PreflightRefused(origin) => (
                codes::ORIGIN_NOT_ALLOWED,
                match origin {
                    Some(origin) => format!("No widget key allows requests from {origin}."),
                    None => "A cross-origin request needs an Origin that a widget key allows.".into(),
                },
            ),
            ApiError::NotReady => (codes::NOT_READY, "Lore is not ready to serve.".into()),
            ApiError::MetricsDisabled => {
                (codes::METRICS_DISABLED, "Metrics are off; set metrics.enabled to serve them.".into())
            }
            ApiError::ProviderUnavailable => (
                codes::PROVIDER_UNAVAILABLE,
                "The model provider did not answer; please try again later.".into(),
            ),
            ApiError::MethodNotAllowed => {
                (codes::METHOD_NOT_ALLOWED, "This path does not take this method.".into())
            }
            ApiError::MetricsKeyRequired => {
                (codes::METRICS_KEY_REQUIRED, "Send the metrics key as `Authorization: Bearer <key>`.".into())
            }
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
            ApiError::Engine(engine::Error::Profile(ProfileError::EvalRegression {
                version,
                baseline,
                regressions,
            })) => Some(
                serde_json::json!({"version": version, "baseline_version": baseline, "regressions": regressions}),
            ),
            ApiError::Engine(engine::Error::AppDb(err)) => appdb_details(err),
            _ => None,
        }
    }
}

fn key_parts(err: &KeyError) -> (Code, String) {
    let code = match err {
        KeyError::Missing => codes::MISSING_API_KEY,
        KeyError::Unknown => codes::INVALID_API_KEY,
        KeyError::Revoked => codes::KEY_REVOKED,
        KeyError::Scope(_) => codes::INSUFFICIENT_SCOPE,
        KeyError::Origin(_) => codes::ORIGIN_NOT_ALLOWED,
        KeyError::RateLimited(_) => codes::RATE_LIMITED,
        KeyError::Invalid(_) => codes::INVALID_KEY_REQUEST,
        KeyError::NotFound(_) => codes::KEY_NOT_FOUND,
        KeyError::NeedsUser(_) => codes::KEY_NEEDS_USER,
        KeyError::InvalidToken(_) => codes::INVALID_TOKEN,
    };
    (code, capitalise(&err.to_string()))
}

fn appdb_parts(err: &AppDbError) -> (Code, String) {
    let code = match err {
        AppDbError::PermissionDenied { .. } => codes::PERMISSION_DENIED,
        AppDbError::UnknownOperation(_) => codes::UNKNOWN_OPERATION,
        AppDbError::UnknownDatabase(_) => codes::DATABASE_NOT_FOUND,
        AppDbError::UnknownTable(_) => codes::TABLE_NOT_FOUND,
        AppDbError::UnknownResource(_) => codes::RESOURCE_NOT_FOUND,
        AppDbError::UnknownTool(_) => codes::TOOL_NOT_FOUND,
        AppDbError::UnknownRecord(_) => codes::RECORD_NOT_FOUND,
        AppDbError::UnknownAttribute(_) => codes::UNKNOWN_ATTRIBUTE,
        AppDbError::TypeMismatch { .. } => codes::TYPE_MISMATCH,
        AppDbError::DuplicateKey { .. } => codes::DUPLICATE_PRIMARY_KEY,
        AppDbError::MissingAttribute(_) => codes::MISSING_ATTRIBUTE,
        AppDbError::AlreadyExists(_) => codes::ALREADY_EXISTS,
        AppDbError::UnknownUser(_) => codes::USER_NOT_FOUND,
        AppDbError::UnknownRole(_) => codes::ROLE_NOT_FOUND,
        AppDbError::RoleInUse(_) => codes::ROLE_IN_USE,
        AppDbError::InvalidPermission(_) => codes::INVALID_PERMISSION,
        AppDbError::InvalidSchema { .. } => codes::INVALID_SCHEMA,
        AppDbError::Invalid(_) => codes::INVALID_OPERATION,
    };
    (code, capitalise(&err.to_string()))
}

fn appdb_details(err: &AppDbError) -> Option<serde_json::Value> {
    match err {
        AppDbError::PermissionDenied { action, target } => {
            Some(serde_json::json!({"action": action, "target": target}))
        }
        AppDbError::TypeMismatch { attribute, expected } => {
            Some(serde_json::json!({"field": attribute, "expected": expected}))
        }
        AppDbError::UnknownAttribute(field) | AppDbError::MissingAttribute(field) => {
            Some(serde_json::json!({"field": field}))
        }
        AppDbError::DuplicateKey { table, key } => Some(serde_json::json!({"table": table, "key": key})),
        AppDbError::InvalidSchema { line, .. } => Some(serde_json::json!({"line": line})),
        _ => None,
    }
}

fn provider_parts(err: &ProviderError) -> (Code, String) {
    let code = match err {
        ProviderError::Invalid(_) => codes::INVALID_PROVIDER,
        ProviderError::AccountNotFound(_) => codes::PROVIDER_NOT_FOUND,
        ProviderError::TargetNotFound(_) => codes::TARGET_NOT_FOUND,
        ProviderError::TargetNotReady { .. } => codes::TARGET_NOT_READY,
        ProviderError::ProbeFailed { .. } => codes::PROBE_FAILED,
        ProviderError::InUse { .. } => codes::PROVIDER_IN_USE,
        ProviderError::Call(_) => codes::PROVIDER_UNAVAILABLE,
    };
    (code, capitalise(&err.to_string()))
}

fn profile_parts(err: &ProfileError) -> (Code, String) {
    let code = match err {
        ProfileError::VersionConflict { .. } => codes::PROFILE_VERSION_CONFLICT,
        ProfileError::NoProfile => codes::PROFILE_NOT_FOUND,
        ProfileError::UnknownVersion(_) => codes::PROFILE_VERSION_NOT_FOUND,
        ProfileError::UnknownPersona(_) => codes::UNKNOWN_PERSONA,
        ProfileError::Invalid(_) => codes::INVALID_PROFILE,
        ProfileError::EvalRegression { .. } => codes::EVAL_REGRESSION,
        ProfileError::UnknownGolden(_) => codes::GOLDEN_QUESTION_NOT_FOUND,
        ProfileError::UnknownPin(_) => codes::PIN_NOT_FOUND,
        ProfileError::UnknownAnswer(_) => codes::ANSWER_NOT_FOUND,
        ProfileError::NotYourAnswer => codes::NOT_YOUR_ANSWER,
    };
    (code, capitalise(&err.to_string()))
}

fn ingest_parts(err: &IngestError) -> (Code, String) {
    let code = match err {
        IngestError::InvalidSource(_) => codes::INVALID_SOURCE,
        IngestError::KindUnavailable(_) => codes::SOURCE_KIND_UNAVAILABLE,
        IngestError::SourceNotFound(_) => codes::SOURCE_NOT_FOUND,
        IngestError::JobNotFound(_) => codes::JOB_NOT_FOUND,
        IngestError::SourceDisabled => codes::SOURCE_DISABLED,
        IngestError::WrongKind { .. } => codes::SOURCE_KIND_MISMATCH,
        IngestError::UnsupportedFile(_) => codes::UNSUPPORTED_FILE_TYPE,
        IngestError::CorruptFile(_) => codes::CORRUPT_FILE,
        IngestError::EmptyFile => codes::EMPTY_FILE,
        IngestError::DocumentOverLimit(_) => codes::DOCUMENT_OVER_LIMIT,
        IngestError::FileTooLarge { .. } => codes::FILE_TOO_LARGE,
        IngestError::PrivateAddress(_) => codes::PRIVATE_ADDRESS_REFUSED,
        IngestError::Fetch(_) => codes::FETCH_FAILED,
        IngestError::ReindexAcknowledgementRequired => codes::REINDEX_ACKNOWLEDGEMENT_REQUIRED,
        IngestError::InvalidTuning(_) => codes::INVALID_TUNING,
        IngestError::Git(problem, _) => match problem {
            GitProblem::Unreachable => codes::GIT_UNREACHABLE,
            GitProblem::NotARepository => codes::GIT_NOT_A_REPOSITORY,
            GitProblem::BranchNotFound => codes::GIT_BRANCH_NOT_FOUND,
            GitProblem::AuthenticationFailed => codes::GIT_AUTHENTICATION_FAILED,
            GitProblem::TooLarge => codes::GIT_REPOSITORY_TOO_LARGE,
        },
        IngestError::WebhookRefused => codes::WEBHOOK_REFUSED,
    };
    (code, capitalise(&err.to_string()))
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect::<String>() + ".",
        None => String::new(),
    }
}

//! Every stable error code Lore answers with, as data: one table that the
//! HTTP mapping (`ApiError::parts`) takes its statuses from, and that the
//! OpenAPI document's error tables, `docs/http.md` and the CLI's codes are
//! checked against (`server/tests/api/units/server_codes.rs`). A new code is added here first.

use axum::http::StatusCode;

/// One stable code: its name on the wire, its HTTP status, and when it is
/// answered (as `docs/http.md` says it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Code {
    pub key: &'static str,
    pub status: StatusCode,
    pub meaning: &'static str,
}

macro_rules! codes {
    ($($name:ident = $status:ident $key:literal $meaning:literal;)*) => {
        $(pub const $name: Code = Code { key: $key, status: StatusCode::$status, meaning: $meaning };)*
        /// Every code, in the order `docs/http.md` lists them.
        pub const ALL: &[Code] = &[$($name),*];
    };
}

codes! {
    UNAUTHENTICATED = UNAUTHORIZED "unauthenticated" "no session, or it expired or was revoked";
    ADMIN_UNAVAILABLE = FORBIDDEN "admin_unavailable" "signed in, but not an authorized admin";
    CROSS_ORIGIN_REJECTED = FORBIDDEN "cross_origin_rejected" "a state-changing request from another site";
    BOOTSTRAP_LINK_INVALID = FORBIDDEN "bootstrap_link_invalid" "the one-time link is unknown, used or expired";
    BOOTSTRAP_NOT_LOOPBACK = FORBIDDEN "bootstrap_not_loopback" "the one-time link was opened from another machine or through a proxy";
    BOOTSTRAP_DISABLED = NOT_FOUND "bootstrap_disabled" "an identity provider is configured, so the one-time link is off";
    OIDC_NOT_CONFIGURED = NOT_FOUND "oidc_not_configured" "OIDC sign-in asked for, but no provider is configured";
    SIGN_IN_FAILED = UNAUTHORIZED "sign_in_failed" "the identity provider's answer did not verify";
    IDENTITY_PROVIDER_UNAVAILABLE = SERVICE_UNAVAILABLE "identity_provider_unavailable" "the identity provider could not be reached";
    EMBEDDING_UNAVAILABLE = SERVICE_UNAVAILABLE "embedding_unavailable" "the embedding model is missing or cannot be loaded";
    NOT_ANSWERABLE = SERVICE_UNAVAILABLE "not_answerable" "the readiness verdict says Lore cannot answer yet (`details.reasons`, one per failing check: `\"concern: detail\"` in the console, the concern alone for an API key's or the widget's caller)";
    RETRIEVAL_FAILING_CLOSED = SERVICE_UNAVAILABLE "retrieval_failing_closed" "the corpus was embedded by another model; a full reindex is needed (the console's message names both models; an API key's or the widget's caller gets a plain message)";
    MALFORMED_JSON = BAD_REQUEST "malformed_json" "the body is not JSON";
    BAD_REQUEST = BAD_REQUEST "bad_request" "the body is not JSON";
    UNSUPPORTED_MEDIA_TYPE = UNSUPPORTED_MEDIA_TYPE "unsupported_media_type" "a JSON endpoint got another content type";
    PAYLOAD_TOO_LARGE = PAYLOAD_TOO_LARGE "payload_too_large" "a JSON body over 2 MB";
    METHOD_NOT_ALLOWED = METHOD_NOT_ALLOWED "method_not_allowed" "the path exists, but not with this method (on `/answer` and `/retrieve`, before any key is asked for)";
    INVALID_INPUT = UNPROCESSABLE_ENTITY "invalid_input" "a field is missing, of the wrong type, unknown, or out of range";
    INVALID_SOURCE = UNPROCESSABLE_ENTITY "invalid_source" "a source's name, kind or configuration is not valid";
    SOURCE_KIND_UNAVAILABLE = UNPROCESSABLE_ENTITY "source_kind_unavailable" "the page bank is announced, not yet available";
    SOURCE_NOT_FOUND = NOT_FOUND "source_not_found" "no such source or run";
    JOB_NOT_FOUND = NOT_FOUND "job_not_found" "no such source or run";
    SOURCE_DISABLED = CONFLICT "source_disabled" "the source is disabled; enable it first";
    SOURCE_KIND_MISMATCH = CONFLICT "source_kind_mismatch" "files sent to a website source";
    UNSUPPORTED_FILE_TYPE = UNSUPPORTED_MEDIA_TYPE "unsupported_file_type" "not Markdown, MDX, reStructuredText, AsciiDoc, text, HTML or PDF";
    CORRUPT_FILE = UNPROCESSABLE_ENTITY "corrupt_file" "the file cannot be read, or has no text";
    EMPTY_FILE = UNPROCESSABLE_ENTITY "empty_file" "the file cannot be read, or has no text";
    DOCUMENT_OVER_LIMIT = UNPROCESSABLE_ENTITY "document_over_limit" "the document passes an extraction limit (elements nested over 512 deep, over 400,000 elements, PDF streams expanding past 100× the file within 32–128 MiB, over 20 s to read); the message says which";
    FILE_TOO_LARGE = PAYLOAD_TOO_LARGE "file_too_large" "over `ingest.upload_max_bytes`";
    PRIVATE_ADDRESS_REFUSED = UNPROCESSABLE_ENTITY "private_address_refused" "a website on a private, loopback or link-local address";
    FETCH_FAILED = BAD_GATEWAY "fetch_failed" "the site could not be fetched at all";
    GIT_UNREACHABLE = BAD_GATEWAY "git_unreachable" "a git source's remote could not be reached";
    GIT_NOT_A_REPOSITORY = UNPROCESSABLE_ENTITY "git_not_a_repository" "a git source's address holds no git repository";
    GIT_BRANCH_NOT_FOUND = UNPROCESSABLE_ENTITY "git_branch_not_found" "a git source's repository has no such branch";
    GIT_AUTHENTICATION_FAILED = UNPROCESSABLE_ENTITY "git_authentication_failed" "a git source's remote refused its credentials, or its token's environment variable is not set";
    GIT_REPOSITORY_TOO_LARGE = UNPROCESSABLE_ENTITY "git_repository_too_large" "a git source's repository is over its `max_repository_mb`";
    WEBHOOK_REFUSED = UNAUTHORIZED "webhook_refused" "a sync webhook call without the source's secret or a valid signature (an unknown source looks the same); nothing is queued";
    REINDEX_ACKNOWLEDGEMENT_REQUIRED = CONFLICT "reindex_acknowledgement_required" "a chunking change on an indexed corpus without the acknowledgement (nothing of the request is saved)";
    INVALID_TUNING = UNPROCESSABLE_ENTITY "invalid_tuning" "chunk size or overlap out of range";
    MISSING_API_KEY = UNAUTHORIZED "missing_api_key" "no `x-api-key`, an unknown key, a revoked key";
    INVALID_API_KEY = UNAUTHORIZED "invalid_api_key" "no `x-api-key`, an unknown key, a revoked key";
    KEY_REVOKED = UNAUTHORIZED "key_revoked" "no `x-api-key`, an unknown key, a revoked key";
    INVALID_TOKEN = UNAUTHORIZED "invalid_token" "an OAuth bearer token at the tool server that is unknown, expired, revoked, for another resource, or whose user is deactivated or gone (with `WWW-Authenticate: Bearer error=\"invalid_token\"`)";
    INSUFFICIENT_SCOPE = FORBIDDEN "insufficient_scope" "the key or token lacks the endpoint's scope (`answer`, `retrieve`, `mcp`, `operations`)";
    ORIGIN_NOT_ALLOWED = FORBIDDEN "origin_not_allowed" "a widget key used from an origin not on its list (or from no page at all); also a CORS preflight from an origin no active widget key lists";
    RATE_LIMITED = TOO_MANY_REQUESTS "rate_limited" "a widget key over its requests per minute";
    INVALID_KEY_REQUEST = UNPROCESSABLE_ENTITY "invalid_key_request" "a key's name, kind, scopes or origins are not valid";
    KEY_NOT_FOUND = NOT_FOUND "key_not_found" "no such record";
    PROVIDER_IN_USE = CONFLICT "provider_in_use" "the provider account's models serve roles; bind them elsewhere or unbind them first (the message names them)";
    PROVIDER_NOT_FOUND = NOT_FOUND "provider_not_found" "no such record";
    TARGET_NOT_FOUND = NOT_FOUND "target_not_found" "no such record";
    PROFILE_NOT_FOUND = NOT_FOUND "profile_not_found" "no such record";
    PROFILE_VERSION_NOT_FOUND = NOT_FOUND "profile_version_not_found" "no such record";
    INVALID_PROVIDER = UNPROCESSABLE_ENTITY "invalid_provider" "a provider type, endpoint, placement, model or price is not valid";
    TARGET_NOT_READY = UNPROCESSABLE_ENTITY "target_not_ready" "the role-binding validator refused: the target is disabled, unprobed, blocked, stale or of another capability, or (embedding) could not embed the corpus for its evaluation or lost the index it was judged on (`details.state`, `details.reason`)";
    PROBE_FAILED = BAD_GATEWAY "probe_failed" "the provider did not answer the probe (the message says why); a provider call failed (the console's message says why; an API key's or the widget's caller gets a plain message, the log keeps the provider's address and reply)";
    PROVIDER_UNAVAILABLE = BAD_GATEWAY "provider_unavailable" "the provider did not answer the probe (the message says why); a provider call failed (the console's message says why; an API key's or the widget's caller gets a plain message, the log keeps the provider's address and reply)";
    PROFILE_VERSION_CONFLICT = CONFLICT "profile_version_conflict" "another version became active since the edit started (`details.active_version`); nothing was overwritten";
    INVALID_PROFILE = UNPROCESSABLE_ENTITY "invalid_profile" "a snapshot out of range, or a persona not in the catalogue";
    UNKNOWN_PERSONA = UNPROCESSABLE_ENTITY "unknown_persona" "a snapshot out of range, or a persona not in the catalogue";
    EVAL_REGRESSION = CONFLICT "eval_regression" "the version answers the golden questions worse than the one it was compared with (`details.regressions`); activate it with `anyway: true` to serve it";
    GOLDEN_QUESTION_NOT_FOUND = NOT_FOUND "golden_question_not_found" "no such golden question or pinned answer";
    PIN_NOT_FOUND = NOT_FOUND "pin_not_found" "no such golden question or pinned answer";
    ANSWER_NOT_FOUND = NOT_FOUND "answer_not_found" "a rating names a trace id that is no answer Lore recorded (unknown, an eval's, a retrieval's, or an answer recorded before ratings); a review names no rated answer";
    NOT_YOUR_ANSWER = FORBIDDEN "not_your_answer" "a rating from someone other than who asked: another access key, another user or another admin; nothing was changed";
    KEY_NEEDS_USER = FORBIDDEN "key_needs_user" "the `operations` and `mcp` scopes act as a user, and the key belongs to none (keys made before users existed)";
    PERMISSION_DENIED = FORBIDDEN "permission_denied" "the caller's role does not allow the operation, or that read or write of `database.table` or `database.table.attribute` (`details.action`, `details.target`); nothing was changed";
    UNKNOWN_OPERATION = BAD_REQUEST "unknown_operation" "`operation` names no operation Lore has";
    DATABASE_NOT_FOUND = NOT_FOUND "database_not_found" "no such database, table, user or role (the message names it)";
    TABLE_NOT_FOUND = NOT_FOUND "table_not_found" "no such database, table, user or role (the message names it)";
    RESOURCE_NOT_FOUND = NOT_FOUND "resource_not_found" "no resource is exported at that path under `/data/` (or at that URI of the tool server)";
    TOOL_NOT_FOUND = NOT_FOUND "tool_not_found" "the tool server offers the caller no tool of that name";
    RECORD_NOT_FOUND = NOT_FOUND "record_not_found" "no record with that primary key (or none the caller may read)";
    USER_NOT_FOUND = NOT_FOUND "user_not_found" "no such database, table, user or role (the message names it)";
    ROLE_NOT_FOUND = NOT_FOUND "role_not_found" "no such database, table, user or role (the message names it)";
    UNKNOWN_ATTRIBUTE = UNPROCESSABLE_ENTITY "unknown_attribute" "a record, condition or `get_attributes` names an attribute the table does not have (`details.field`)";
    TYPE_MISMATCH = UNPROCESSABLE_ENTITY "type_mismatch" "a value is not of its attribute's type, or a required attribute is missing (`details.field`); nothing of the call was written";
    MISSING_ATTRIBUTE = UNPROCESSABLE_ENTITY "missing_attribute" "a value is not of its attribute's type, or a required attribute is missing (`details.field`); nothing of the call was written";
    DUPLICATE_PRIMARY_KEY = CONFLICT "duplicate_primary_key" "an insert's primary key exists already (`details.key`); nothing of the batch was written";
    ALREADY_EXISTS = CONFLICT "already_exists" "a database, table, attribute, user or role of that name exists";
    ROLE_IN_USE = CONFLICT "role_in_use" "a role that users still have cannot be dropped";
    INVALID_PERMISSION = UNPROCESSABLE_ENTITY "invalid_permission" "a field of a permission tree is wrong (the message names it by its path, `permission.dev.tables.dog.read`)";
    INVALID_SCHEMA = UNPROCESSABLE_ENTITY "invalid_schema" "a declaration of the schema file is wrong (`details.line` names its line)";
    INVALID_OPERATION = UNPROCESSABLE_ENTITY "invalid_operation" "an operation's arguments, or a name it gives, are not valid (the message says which)";
    METRICS_DISABLED = NOT_FOUND "metrics_disabled" "`/metrics` is off";
    METRICS_KEY_REQUIRED = UNAUTHORIZED "metrics_key_required" "`/metrics` needs `Authorization: Bearer <metrics.key>`";
    CONFIGURATION_INVALID = SERVICE_UNAVAILABLE "configuration_invalid" "the configuration cannot work";
    NOT_READY = SERVICE_UNAVAILABLE "not_ready" "(`/readyz`) database unreachable or migrations pending";
    BUSY = SERVICE_UNAVAILABLE "busy" "the SQLite database stayed locked by another writer (another `lore` process, a long write) past the wait; nothing was changed, try again";
    INTERNAL = INTERNAL_SERVER_ERROR "internal" "anything else; details go to the log only";
}

/// The one code only the CLI prints: an indexing run it ran (or followed)
/// ended `failed` or `cancelled`. Its `--json` body carries the run as
/// `details`. Every other CLI failure uses a code of [`ALL`].
pub const JOB_FAILED: &str = "job_failed";

/// The code named `key`, if Lore has one.
pub fn find(key: &str) -> Option<Code> {
    ALL.iter().copied().find(|code| code.key == key)
}

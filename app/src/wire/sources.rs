//! The Sources screen: sources, their documents and indexing runs, uploads,
//! and the corpus search.

use serde::{Deserialize, Serialize};

/// A knowledge source (`GET /admin/sources/`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SourceView {
    pub id: String,
    pub name: String,
    /// `upload` or `website`.
    pub kind: String,
    pub enabled: bool,
    /// `empty`, `queued`, `indexing`, `ready` or `failed`.
    pub status: String,
    /// Kind-specific configuration (a website's start URL, patterns, limits).
    pub config: serde_json::Value,
    /// `static`, `low`, `medium` or `high`.
    pub volatility: String,
    /// Who may read it through answers and retrieval: `everyone`, `table`
    /// (a table source's table's readers), or role names separated by commas.
    pub audience: String,
    pub document_count: i64,
    pub chunk_count: i64,
    pub last_error: Option<String>,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub last_synced_at: Option<String>,
    /// Where the last completed sync left off, in a line (a git source's
    /// commit, and the files it changed); `None` for kinds that keep no state.
    #[serde(default)]
    pub sync_summary: Option<String>,
    /// The state itself, as the kind recorded it (a git source's `commit`,
    /// `branch`, `compared`, `changed`, `removed`, `files`, `skipped`).
    #[serde(default)]
    pub sync_state: Option<serde_json::Value>,
    pub next_sync_at: Option<String>,
    /// Within its volatility's re-sync interval (`None`: never synced).
    pub fresh: Option<bool>,
    /// The latest indexing run, with its live progress.
    pub latest_job: Option<JobView>,
}

/// One indexing run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobView {
    pub id: String,
    pub source_id: Option<String>,
    pub full: bool,
    /// `queued`, `running`, `succeeded`, `failed` or `cancelled`.
    pub status: String,
    pub trigger: String,
    pub progress: ProgressView,
    pub errors: Vec<DocumentErrorView>,
    pub message: Option<String>,
    /// More than 1: resumed after a restart.
    pub attempts: i64,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
}

/// The vector index of the chunks (`GET /admin/index`): how much of the
/// corpus it covers, what it was trained on, and a training under way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VectorIndexView {
    pub chunks: u64,
    /// Chunks the index covers; `None` without an index (below its
    /// threshold every vector is compared). The rest are compared exactly
    /// until the next fold takes them in.
    pub indexed: Option<u64>,
    /// The chunks its partitions were trained on, and when (RFC 3339, UTC).
    pub trained_on: Option<u64>,
    pub trained_at: Option<String>,
    /// A training anew under way (or the last one, failed).
    pub training: Option<TrainingView>,
}

/// A training of the vector index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainingView {
    pub chunks: u64,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// Why it failed; it is tried again ten minutes later.
    pub failed: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProgressView {
    pub discovered: u64,
    pub fetched: u64,
    pub extracted: u64,
    pub chunked: u64,
    pub embedded: u64,
    pub unchanged: u64,
    pub failed: u64,
    pub duplicates: u64,
    pub skipped: u64,
    pub removed: u64,
    pub done: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocumentErrorView {
    pub uri: String,
    pub error: String,
}

/// A document of a source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocumentView {
    pub id: String,
    pub uri: String,
    pub title: String,
    pub url: Option<String>,
    /// `pending`, `indexed` or `failed`.
    pub status: String,
    pub chunk_count: i64,
    pub error: Option<String>,
    pub indexed_at: Option<String>,
}

/// `POST /admin/sources/{id}/files`: the stored file and the run indexing it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UploadReceipt {
    pub document: DocumentView,
    pub job: JobView,
}

/// `POST /admin/search`: hybrid retrieval with each mode's raw score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchResults {
    pub results: Vec<SearchHit>,
    pub candidates: usize,
    pub below_cutoff: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    pub chunk_id: String,
    pub source_id: String,
    pub document_id: String,
    pub title: String,
    pub url: Option<String>,
    pub heading: Option<String>,
    pub text: String,
    /// The fused score that orders results and meets the cutoff.
    pub score: f32,
    /// Cosine similarity to the query.
    pub vector_score: f32,
    /// Raw BM25 score (absent: not a full-text match).
    pub text_score: Option<f32>,
}

/// `POST /admin/sources/` and the wizard's `POST /admin/setup/source`: a new
/// source, in the JSON shape of `engine::sources::NewSource`. `config` is
/// kind-specific and the kind's connector checks it; the console builds it
/// from the kind's form ([`SourceKindView::fields`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateSourceRequest {
    pub name: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
    /// `static`, `low`, `medium` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volatility: Option<String>,
    /// `everyone`, `table` or role names separated by commas (default: the
    /// kind's, see [`SourceView::audience`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
}

/// `GET /admin/sources/kinds`: a kind of source as the form that creates
/// one shows it (`engine::sources::connector::KindInfo`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SourceKindView {
    pub key: String,
    pub label: String,
    /// `false`: announced, not yet available.
    pub available: bool,
    /// Files are uploaded into it (after it is created).
    pub takes_files: bool,
    /// It re-syncs on a schedule, so the form asks how often.
    pub resyncs: bool,
    pub default_volatility: String,
    pub resync_label: String,
    pub never_label: String,
    /// Shown above its fields.
    pub note: Option<String>,
    pub fields: Vec<FieldView>,
}

/// One field of a kind's form, filling configuration key `key`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FieldView {
    pub key: String,
    pub label: String,
    pub input: FieldInput,
    pub required: bool,
    pub default: String,
    pub placeholder: String,
    /// Under "More options".
    pub advanced: bool,
    /// The least a `number` may be.
    pub min: Option<u32>,
    pub choices: Vec<ChoiceView>,
}

/// How a field is entered, and the JSON value it gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldInput {
    /// A string.
    Text,
    /// A string that is a URL.
    Url,
    /// A whole number, at least `min`.
    Number,
    /// Strings entered separated by commas, sent as an array.
    List,
    /// One of `choices`.
    Choice,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChoiceView {
    pub value: String,
    pub label: String,
}

impl FieldView {
    /// The JSON value the field's entry gives (`None`: left empty, so the
    /// kind's default applies). A number that does not read as one is sent
    /// as typed, for the kind's check to refuse with its own words.
    pub fn value(&self, entered: &str) -> Option<serde_json::Value> {
        let entered = entered.trim();
        match self.input {
            FieldInput::List => {
                let items: Vec<serde_json::Value> = entered
                    .split([',', '\n'])
                    .map(str::trim)
                    .filter(|item| !item.is_empty())
                    .map(|item| item.to_owned().into())
                    .collect();
                (!items.is_empty()).then_some(serde_json::Value::Array(items))
            }
            _ if entered.is_empty() => None,
            FieldInput::Number => Some(entered.parse::<u64>().map_or_else(|_| entered.into(), Into::into)),
            _ => Some(entered.into()),
        }
    }
}

/// Who `audience` (as [`SourceView::audience`] writes it) lets read, in
/// words: what the console's source card and `lore sources` say.
pub fn audience_in_words(audience: &str) -> String {
    match audience {
        "everyone" => "every caller, the widget and keys without a user included".to_owned(),
        "table" => {
            "the users whose role may read its table, each with the attributes its role may read".to_owned()
        }
        roles => format!("the users of role {} (and admins)", roles.replace(',', ", ")),
    }
}

/// `PUT /admin/sources/{id}/audience`: who may read the source through
/// answers and retrieval, from the next request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AudienceRequest {
    /// `everyone`, `table` or role names separated by commas.
    pub audience: String,
}

/// `PUT /admin/sources/{id}/volatility`: how fast the source's content goes stale.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VolatilityRequest {
    /// `static`, `low`, `medium` or `high`.
    pub volatility: String,
}

/// `POST /admin/search`: the corpus search of the Sources screen and the
/// Playground's corpus diagnostic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    pub query: String,
    #[serde(default)]
    pub top_k: Option<usize>,
    /// The Playground's corpus diagnostic: no score cutoff, and disabled
    /// sources searched too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub raw: bool,
}

#[cfg(feature = "ssr")]
mod from_engine {
    use super::*;
    use crate::wire::time;

    /// Retrieval results with each mode's raw score, as the console and
    /// `lore search` show them.
    impl From<engine::retrieve::Retrieval> for SearchResults {
        fn from(found: engine::retrieve::Retrieval) -> Self {
            Self {
                candidates: found.candidates,
                below_cutoff: found.below_cutoff,
                results: found
                    .results
                    .into_iter()
                    .map(|r| SearchHit {
                        chunk_id: r.chunk.id,
                        source_id: r.chunk.source_id,
                        document_id: r.chunk.document_id,
                        title: r.chunk.title,
                        url: r.chunk.url,
                        heading: r.chunk.heading,
                        text: r.chunk.text,
                        score: r.score,
                        vector_score: r.vector_score,
                        text_score: r.text_score,
                    })
                    .collect(),
            }
        }
    }

    impl From<engine::sources::Document> for DocumentView {
        fn from(doc: engine::sources::Document) -> Self {
            Self {
                id: doc.id,
                uri: doc.uri,
                title: doc.title,
                url: doc.url,
                status: doc.status.key().to_owned(),
                chunk_count: doc.chunk_count.into(),
                error: doc.error,
                indexed_at: doc.indexed_at.map(time),
            }
        }
    }

    impl From<engine::upkeep::Status> for VectorIndexView {
        fn from(status: engine::upkeep::Status) -> Self {
            Self {
                chunks: status.index.rows as u64,
                indexed: status.index.indexed.map(|rows| rows as u64),
                trained_on: status.trained.as_ref().map(|t| t.rows as u64),
                trained_at: status.trained.map(|t| time(t.at)),
                training: status.training.map(|t| TrainingView {
                    chunks: t.rows as u64,
                    started_at: time(t.started_at),
                    failed: t.failed,
                }),
            }
        }
    }

    impl From<engine::ingest::jobs::Job> for JobView {
        fn from(job: engine::ingest::jobs::Job) -> Self {
            Self {
                id: job.id,
                source_id: job.source_id,
                full: job.full,
                status: job.status,
                trigger: job.trigger,
                progress: job.progress.into(),
                errors: job.errors.into_iter().map(Into::into).collect(),
                message: job.message,
                attempts: job.attempts.into(),
                created_at: time(job.created_at),
                started_at: job.started_at.map(time),
                finished_at: job.finished_at.map(time),
            }
        }
    }

    impl From<engine::ingest::lifecycle::Overview> for SourceView {
        fn from(overview: engine::ingest::lifecycle::Overview) -> Self {
            let source = overview.source;
            let sync_summary = source.sync_summary();
            Self {
                fresh: overview.fresh,
                id: source.id,
                name: source.name,
                kind: source.kind.key().to_owned(),
                enabled: source.enabled,
                status: source.status.key().to_owned(),
                config: source.config.to_json(),
                volatility: source.volatility.key().to_owned(),
                audience: source.audience.to_string(),
                document_count: source.document_count.into(),
                chunk_count: source.chunk_count.into(),
                last_error: source.last_error,
                created_at: time(source.created_at),
                last_synced_at: source.last_synced_at.map(time),
                sync_summary,
                sync_state: source.sync_state,
                next_sync_at: source.next_sync_at.map(time),
                latest_job: overview.latest_job.map(JobView::from),
            }
        }
    }

    impl From<engine::ingest::Progress> for ProgressView {
        fn from(progress: engine::ingest::Progress) -> Self {
            let engine::ingest::Progress {
                discovered,
                fetched,
                extracted,
                chunked,
                embedded,
                unchanged,
                failed,
                duplicates,
                skipped,
                removed,
                done,
            } = progress;
            Self {
                discovered,
                fetched,
                extracted,
                chunked,
                embedded,
                unchanged,
                failed,
                duplicates,
                skipped,
                removed,
                done,
            }
        }
    }

    impl From<engine::ingest::DocumentError> for DocumentErrorView {
        fn from(error: engine::ingest::DocumentError) -> Self {
            Self { uri: error.uri, error: error.error }
        }
    }

    impl From<engine::sources::SourceKind> for SourceKindView {
        fn from(kind: engine::sources::SourceKind) -> Self {
            use engine::sources::connector::Input;
            let info = kind.info();
            let fields = info
                .fields
                .iter()
                .map(|field| {
                    let (input, min, choices) = match field.input {
                        Input::Text => (FieldInput::Text, None, Vec::new()),
                        Input::Url => (FieldInput::Url, None, Vec::new()),
                        Input::Number { min } => (FieldInput::Number, Some(min), Vec::new()),
                        Input::List => (FieldInput::List, None, Vec::new()),
                        Input::Choice(of) => (
                            FieldInput::Choice,
                            None,
                            of.iter()
                                .map(|(value, label)| ChoiceView {
                                    value: (*value).to_owned(),
                                    label: (*label).to_owned(),
                                })
                                .collect(),
                        ),
                    };
                    FieldView {
                        key: field.key.to_owned(),
                        label: field.label.to_owned(),
                        input,
                        required: field.required,
                        default: field.default.to_owned(),
                        placeholder: field.placeholder.to_owned(),
                        advanced: field.advanced,
                        min,
                        choices,
                    }
                })
                .collect();
            Self {
                key: info.key.to_owned(),
                label: info.label.to_owned(),
                available: info.available,
                takes_files: info.takes_files,
                resyncs: info.resyncs,
                default_volatility: info.default_volatility.key().to_owned(),
                resync_label: info.resync_label.to_owned(),
                never_label: info.never_label.to_owned(),
                note: info.note.map(str::to_owned),
                fields,
            }
        }
    }

    impl From<CreateSourceRequest> for engine::sources::NewSource {
        fn from(r: CreateSourceRequest) -> Self {
            Self {
                name: r.name,
                kind: r.kind,
                config: r.config,
                volatility: r.volatility,
                audience: r.audience,
            }
        }
    }
}

//! The answer and retrieval surfaces: `POST /answer` and the Playground's
//! answer mode (with the events of a streamed answer), the Playground's
//! profile retrieval, and `POST /retrieve`.
//!
//! The public requests' and responses' schemas are the published document
//! (`GET /openapi.json`, `server::http::openapi`): their doc comments and
//! `schemars` attributes are part of it, so a type there gets no doc comment
//! it did not have.

use serde::{Deserialize, Serialize};

use super::profile::RetrievalSettingsView;
use super::sources::SearchResults;

/// The characters Rust's `char::is_whitespace` (Unicode `White_Space`)
/// calls whitespace, as ranges: the ones the engine trims from a query and
/// collapses in a question (`str::trim`, `str::split_whitespace`) before it
/// checks them. A test (in `server::http::openapi`) holds this table to
/// `char::is_whitespace` over every character.
pub const WHITESPACE: &[(char, char)] = &[
    ('\u{9}', '\u{d}'),
    ('\u{20}', '\u{20}'),
    ('\u{85}', '\u{85}'),
    ('\u{a0}', '\u{a0}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{2000}', '\u{200a}'),
    ('\u{2028}', '\u{2029}'),
    ('\u{202f}', '\u{202f}'),
    ('\u{205f}', '\u{205f}'),
    ('\u{3000}', '\u{3000}'),
];

/// The `pattern` of the question and the query: at least one character that
/// is not whitespace, as an ECMA-262 regular expression (OpenAPI's dialect)
/// that spells the whitespace out, since `\S` there means another set (it
/// counts U+0085 as visible and U+FEFF as whitespace). The pattern is not
/// anchored, so it matches a text with any such character.
pub fn visible_text_pattern() -> String {
    let class: String = WHITESPACE
        .iter()
        .map(|&(first, last)| {
            let escape = |c: char| format!("\\u{:04X}", u32::from(c));
            if first == last {
                escape(first)
            } else {
                format!("{}-{}", escape(first), escape(last))
            }
        })
        .collect();
    format!("[^{class}]")
}

/// How `POST /answer` reads `question` (`engine::answer::normalise`): the
/// length bounds hold after normalisation, so a question of whitespace alone
/// is refused although its raw length is 1.
pub const QUESTION_DESCRIPTION: &str = "The question. Lore normalises it before it checks it: whitespace at either end is removed and each run of whitespace inside becomes one space, where whitespace is Unicode `White_Space` (tab, line feed, vertical tab, form feed, carriage return, space, U+0085, U+00A0, U+1680, U+2000 to U+200A, U+2028, U+2029, U+202F, U+205F, U+3000; `pattern` lists them). The normalised question must have from 1 to 4000 characters (Unicode scalar values), or the answer is 422 `invalid_input`: so a question of whitespace alone, such as a lone U+0085, is refused although its raw length is 1. Other characters, control characters included, are kept and counted. The raw text's `maxLength` is therefore a safe bound, not the exact one: whitespace that normalisation removes does not count.";

/// How `POST /retrieve` reads `query` (`engine::search`): trimmed, then
/// checked.
pub const QUERY_DESCRIPTION: &str = "The search text. Lore trims whitespace from both ends before it checks it, where whitespace is Unicode `White_Space` (tab, line feed, vertical tab, form feed, carriage return, space, U+0085, U+00A0, U+1680, U+2000 to U+200A, U+2028, U+2029, U+202F, U+205F, U+3000; `pattern` lists them). The trimmed query must have from 1 to 4000 characters (Unicode scalar values), or the answer is 422 `invalid_input`: so a query of whitespace alone, such as a lone U+0085, is refused although its raw length is 1. Whitespace inside the query and other characters, control characters included, are kept and counted. The raw text's `maxLength` is therefore a safe bound, not the exact one: whitespace at the ends does not count.";

// `POST /answer` and `POST /admin/playground/answer`. (No doc comment: it
// would become the schema's description.)
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    /// The engine normalises the question before it checks it
    /// (`engine::answer::normalise`): the document says how, and its
    /// `pattern` refuses what normalisation leaves empty.
    #[cfg_attr(
        feature = "ssr",
        schemars(
            length(min = 1, max = 4000),
            pattern(crate::wire::visible_text_pattern()),
            description = crate::wire::QUESTION_DESCRIPTION
        )
    )]
    pub question: String,
    #[serde(default)]
    pub stream: Option<bool>,
}

/// A `token` event's data: the next piece of the answer's text (a word
/// with the whitespace before it), so that the pieces, joined, are the text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct AnswerToken {
    pub text: String,
}

/// `POST /answer` and the Playground's answer mode: the answer, its
/// citations, the cache outcome and the trace (which is also the run's cost
/// funnel).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct AnswerResponse {
    pub answer: String,
    /// True when Lore declined: nothing retrievable answers, or no grounded answer was written.
    pub refused: bool,
    pub grounded: bool,
    /// True when an answer the admin pinned to this question (or a close
    /// paraphrase) was served: no model wrote it.
    #[serde(default)]
    pub pinned: bool,
    pub citations: Vec<CitationView>,
    /// Each statement of the answer with the sentence (or two) of its cited
    /// passage that says it. Empty for a refusal and a pinned answer.
    #[serde(default)]
    pub statements: Vec<StatementView>,
    /// For a refusal: the closest passages found, which may be related but
    /// do not answer the question (not citations). Empty otherwise.
    #[serde(default)]
    pub related: Vec<RelatedView>,
    pub cache: CacheView,
    pub profile_version: i32,
    pub trace: TraceView,
    /// Where the asker rates this answer (absent where it cannot be rated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<super::FeedbackLink>,
}

impl AnswerResponse {
    /// Says where to rate the answer: `POST` to `href`.
    pub fn rated_at(mut self, href: &str) -> Self {
        self.feedback = Some(super::FeedbackLink {
            href: Some(href.to_owned()),
            tool: None,
            trace_id: self.trace.id.clone(),
        });
        self
    }

    /// Says which tool of the tool server rates the answer.
    pub fn rated_by_tool(mut self, tool: &str) -> Self {
        self.feedback = Some(super::FeedbackLink {
            href: None,
            tool: Some(tool.to_owned()),
            trace_id: self.trace.id.clone(),
        });
        self
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct CitationView {
    /// The passage number the answer cites as `[n]`.
    pub index: usize,
    pub chunk_id: String,
    pub source_id: String,
    pub document_id: String,
    pub title: String,
    pub url: Option<String>,
    pub snippet: String,
    pub score: f32,
}

/// One statement of an answer and what supports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct StatementView {
    /// The statement, without its list marker and `[n]` markers.
    pub text: String,
    /// The `index` of the citation whose passage says it.
    pub citation: usize,
    pub support: SupportView,
}

/// A span of a passage's text: one sentence, or two neighbouring ones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct SupportView {
    /// The span, verbatim.
    pub quote: String,
    /// Where the span starts in the passage's text (the `text` `/retrieve`
    /// returns for its chunk), in characters (Unicode code points).
    pub start: usize,
    /// Where it ends, exclusive.
    pub end: usize,
    /// The statement's (or the question's) words the span says, as
    /// `[start, end)` character ranges of `quote`.
    pub marks: Vec<[usize; 2]>,
}

/// A passage a refusal lists as maybe related.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct RelatedView {
    pub chunk_id: String,
    pub source_id: String,
    pub document_id: String,
    pub title: String,
    pub url: Option<String>,
    /// Its sentence closest to the question.
    pub sentence: SupportView,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct CacheView {
    /// `hit`, `miss` or `bypass`.
    pub status: String,
    /// `exact` or `semantic` on a hit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Similarity of the nearest cached question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct StageView {
    pub stage: String,
    pub decision: String,
    /// A summary, bounded in length.
    pub reason: String,
    pub duration_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Everything the stage weighed, where the reason summarises it (the
    /// grounding check's every statement). Only for callers who see reasons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct TracePassageView {
    pub index: usize,
    pub chunk_id: String,
    pub title: String,
    pub score: f32,
    pub vector_score: f32,
    pub text_score: Option<f32>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct UsageView {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub estimated_cost_usd: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct TraceView {
    pub id: String,
    pub stages: Vec<StageView>,
    pub retrieval: Vec<TracePassageView>,
    pub model: Option<String>,
    pub usage: UsageView,
}

/// The Playground's profile-retrieval mode: the active version's resolved
/// scope and settings, and what they retrieve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileRetrievalView {
    pub profile_version: Option<i32>,
    pub settings: RetrievalSettingsView,
    /// The enabled sources retrieval searches (name and id).
    pub sources: Vec<(String, String)>,
    pub results: SearchResults,
}

/// `POST /admin/playground/retrieval`: what the active profile version
/// retrieves for `query`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrievalRequest {
    pub query: String,
    /// Retrieve as this caller would: `admin` (the default), `everyone`,
    /// `role:NAME` or `user:NAME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_as: Option<String>,
}

/// `POST /admin/playground/answer`: the question, as `POST /answer` takes
/// it, and who to answer as (as [`RetrievalRequest::answer_as`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlaygroundAnswerRequest {
    pub question: String,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_as: Option<String>,
}

// `POST /retrieve`. (No doc comments on the `/retrieve` shapes but the ones
// they had: they are the schemas' descriptions.)
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RetrieveRequest {
    /// The engine trims the query before it checks it
    /// (`engine::search`): the document says so, and its `pattern`
    /// refuses what trimming leaves empty.
    #[cfg_attr(
        feature = "ssr",
        schemars(
            length(min = 1, max = 4000),
            pattern(crate::wire::visible_text_pattern()),
            description = crate::wire::QUERY_DESCRIPTION
        )
    )]
    pub query: String,
    /// Replaces the active profile version's top k.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schemars(range(min = 1, max = 50)))]
    pub top_k: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct RetrieveResult {
    pub chunk_id: String,
    pub source_id: String,
    pub document_id: String,
    pub title: String,
    pub url: Option<String>,
    pub text: String,
    pub score: f32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct TraceStage {
    pub stage: String,
    pub decision: String,
    pub reason: String,
    pub duration_ms: f64,
}

/// One result's scores: the fused one and each mode's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ResultScores {
    pub chunk_id: String,
    pub score: f32,
    /// Cosine similarity of the query's and the chunk's embeddings.
    pub vector_score: f32,
    /// BM25 score of the full-text search, when the chunk matched it.
    pub text_score: Option<f32>,
    /// The reranker's relevance score, when a bound reranker ordered the
    /// results (its scale is the reranker's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank_score: Option<f32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct RetrieveTrace {
    pub id: String,
    pub stages: Vec<TraceStage>,
    /// Per result, in order: the fused score and the score of each mode.
    pub retrieval: Vec<ResultScores>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct RetrieveResponse {
    pub results: Vec<RetrieveResult>,
    pub trace: RetrieveTrace,
}

#[cfg(feature = "ssr")]
mod from_engine {
    use super::*;

    impl From<engine::search::ProfileRetrieval> for ProfileRetrievalView {
        fn from(p: engine::search::ProfileRetrieval) -> Self {
            Self {
                profile_version: p.profile_version,
                settings: RetrievalSettingsView::from(p.settings),
                sources: p.sources,
                results: SearchResults::from(p.found),
            }
        }
    }

    impl From<engine::answer::Stage> for StageView {
        fn from(s: engine::answer::Stage) -> Self {
            Self {
                stage: s.stage.key().to_owned(),
                decision: s.decision,
                reason: s.reason,
                duration_ms: s.duration_ms,
                cost_usd: s.cost_usd,
                detail: s.detail,
            }
        }
    }

    impl From<engine::answer::Citation> for CitationView {
        fn from(c: engine::answer::Citation) -> Self {
            CitationView {
                index: c.index,
                chunk_id: c.chunk_id,
                source_id: c.source_id,
                document_id: c.document_id,
                title: c.title,
                url: c.url,
                snippet: c.snippet,
                score: c.score,
            }
        }
    }

    impl From<CitationView> for engine::answer::Citation {
        fn from(c: CitationView) -> Self {
            engine::answer::Citation {
                index: c.index,
                chunk_id: c.chunk_id,
                source_id: c.source_id,
                document_id: c.document_id,
                title: c.title,
                url: c.url,
                snippet: c.snippet,
                score: c.score,
            }
        }
    }

    impl From<engine::answer::grounding::Support> for SupportView {
        fn from(s: engine::answer::grounding::Support) -> Self {
            Self { quote: s.quote, start: s.start, end: s.end, marks: s.marks }
        }
    }

    impl From<engine::answer::Answer> for AnswerResponse {
        fn from(a: engine::answer::Answer) -> Self {
            use engine::answer::CacheStatus;
            Self {
                answer: a.answer,
                refused: a.refused,
                grounded: a.grounded,
                pinned: a.pinned,
                citations: a.citations.into_iter().map(CitationView::from).collect(),
                statements: a
                    .statements
                    .into_iter()
                    .map(|s| StatementView {
                        text: s.text,
                        citation: s.citation,
                        support: SupportView::from(s.support),
                    })
                    .collect(),
                related: a
                    .related
                    .into_iter()
                    .map(|r| RelatedView {
                        chunk_id: r.chunk_id,
                        source_id: r.source_id,
                        document_id: r.document_id,
                        title: r.title,
                        url: r.url,
                        sentence: SupportView::from(r.sentence),
                    })
                    .collect(),
                cache: CacheView {
                    status: match a.cache.status {
                        CacheStatus::Hit => "hit",
                        CacheStatus::Miss => "miss",
                        CacheStatus::Bypass => "bypass",
                    }
                    .to_owned(),
                    kind: a.cache.kind,
                    similarity: a.cache.similarity,
                },
                profile_version: a.profile_version,
                trace: TraceView {
                    id: a.trace.id,
                    stages: a.trace.stages.into_iter().map(StageView::from).collect(),
                    retrieval: a
                        .trace
                        .retrieval
                        .into_iter()
                        .map(|p| TracePassageView {
                            index: p.index,
                            chunk_id: p.chunk_id,
                            title: p.title,
                            score: p.score,
                            vector_score: p.vector_score,
                            text_score: p.text_score,
                        })
                        .collect(),
                    model: a.trace.model,
                    usage: UsageView {
                        input_tokens: a.trace.usage.input_tokens,
                        output_tokens: a.trace.usage.output_tokens,
                        estimated_cost_usd: a.trace.usage.estimated_cost_usd,
                    },
                },
                feedback: None,
            }
        }
    }

    impl From<engine::search::Traced> for RetrieveResponse {
        fn from(traced: engine::search::Traced) -> Self {
            let engine::search::Traced { found, trace } = traced;
            let retrieval = found
                .results
                .iter()
                .map(|r| ResultScores {
                    chunk_id: r.chunk.id.clone(),
                    score: r.score,
                    vector_score: r.vector_score,
                    text_score: r.text_score,
                    rerank_score: r.rerank_score.filter(|score| *score > f32::MIN),
                })
                .collect();
            let results = found
                .results
                .into_iter()
                .map(|r| RetrieveResult {
                    chunk_id: r.chunk.id,
                    source_id: r.chunk.source_id,
                    document_id: r.chunk.document_id,
                    title: r.chunk.title,
                    url: r.chunk.url,
                    text: r.chunk.text,
                    score: r.score,
                })
                .collect();
            let stages = trace
                .stages
                .into_iter()
                .map(|s| TraceStage {
                    stage: s.stage.key().to_owned(),
                    decision: s.decision,
                    reason: s.reason,
                    duration_ms: s.duration_ms,
                })
                .collect();
            RetrieveResponse { results, trace: RetrieveTrace { id: trace.id, stages, retrieval } }
        }
    }
}

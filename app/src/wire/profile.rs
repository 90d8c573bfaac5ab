//! The Prompt screen and the wizard's persona step: personas, profile
//! versions and their snapshots, save, restore and render.

use serde::{Deserialize, Serialize};

/// A persona of the catalogue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PersonaView {
    pub key: String,
    pub name: String,
    pub summary: String,
}

/// Optional details that tailor the persona's prompt. A misspelt detail is
/// refused, as the engine's `Details` refuses it, not silently dropped.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileDetails {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organisation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_instructions: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BehaviorSettings {
    /// `neutral`, `friendly`, `formal` or `technical`.
    pub tone: String,
    /// `brief`, `standard` or `detailed`.
    pub length: String,
    /// `inline` or `footnotes`.
    pub citation_style: String,
    pub refusal: String,
    /// `auto` (quoted on small on-node models), `generated` or `quoted`.
    #[serde(default = "auto")]
    pub composition: String,
}

fn auto() -> String {
    "auto".to_owned()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheGateSettings {
    pub enabled: bool,
    pub min_similarity: f32,
    pub max_age_seconds: u64,
    pub grounded_only: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetrievalSettingsView {
    pub top_k: usize,
    pub score_cutoff: f32,
    pub vector_weight: f32,
    pub text_weight: f32,
    /// How many candidates a bound reranker reorders before the top k.
    #[serde(default = "default_rerank_candidates")]
    pub rerank_candidates: usize,
}

fn default_rerank_candidates() -> usize {
    20
}

/// A complete serving snapshot (what one profile version holds).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileSnapshot {
    pub persona: String,
    #[serde(default)]
    pub details: ProfileDetails,
    pub prompt: String,
    pub behavior: BehaviorSettings,
    pub cache: CacheGateSettings,
    pub retrieval: RetrievalSettingsView,
}

/// One profile version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileVersionView {
    pub version: i64,
    pub based_on: Option<i64>,
    pub active: bool,
    pub note: Option<String>,
    pub created_by: String,
    pub created_at: String,
    pub evals: Option<serde_json::Value>,
    pub snapshot: ProfileSnapshot,
    /// The answers it served that their askers rated helpful, and
    /// unhelpful (in the version list; 0 where a single version is shown).
    #[serde(default)]
    pub helpful: i64,
    #[serde(default)]
    pub unhelpful: i64,
}

/// The Prompt screen: the personas, the active version and the history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileOverview {
    pub personas: Vec<PersonaView>,
    /// `None` until the first index starts.
    pub active: Option<ProfileVersionView>,
    /// Newest first, the active one included.
    pub versions: Vec<ProfileVersionView>,
}

/// `POST /admin/profile/versions`: a save from the editor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaveProfileRequest {
    /// The version the editor started from.
    pub base_version: i64,
    pub snapshot: ProfileSnapshot,
    #[serde(default)]
    pub note: Option<String>,
}

/// `POST /admin/profile/versions/{version}/restore`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestoreRequest {
    /// The version the admin saw active; guards like a save's base.
    #[serde(default)]
    pub expected_active: Option<i32>,
    /// Activate a version the eval gate kept inactive ("activate anyway");
    /// recorded in its gate and the audit log.
    #[serde(default)]
    pub anyway: bool,
}

/// A golden question.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GoldenView {
    pub id: String,
    pub question: String,
    pub expected_facts: Vec<String>,
    pub should_refuse: bool,
    pub expected_source: Option<String>,
    /// `prompt`, `playground`, `dashboard` or `cli`.
    pub origin: String,
    pub created_by: String,
    pub created_at: String,
    /// Who evals ask it as (`None`: an admin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_as: Option<String>,
}

/// `POST /admin/golden`: a golden question (one with the same question is replaced).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoldenRequest {
    pub question: String,
    /// Each to be found in a right answer (case and spacing aside).
    #[serde(default)]
    pub expected_facts: Vec<String>,
    #[serde(default)]
    pub should_refuse: bool,
    #[serde(default)]
    pub expected_source: Option<String>,
    /// Where it was added: `prompt` (the default), `playground` or `dashboard`.
    #[serde(default)]
    pub origin: Option<String>,
    /// Who evals ask it as: `admin` (the default), `everyone`, `role:NAME`
    /// or `user:NAME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_as: Option<String>,
}

/// `GET /admin/profile/judging`: a candidate being judged by the eval gate
/// right now, with how far it got.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JudgingView {
    pub id: String,
    /// What is judged (the candidate's note).
    pub what: String,
    /// The candidate version, once stored (a shadow build comes first).
    pub version: Option<i64>,
    pub by: String,
    /// `shadow` (embedding every chunk with a candidate embedding model),
    /// `candidate` or `baseline` (the golden questions answered as the
    /// candidate, then as the active version).
    pub step: String,
    pub done: u64,
    /// `0` until the step knows its size.
    pub total: u64,
    pub started_at: String,
}

impl JudgingView {
    /// The step in words, with its count.
    pub fn describe(&self) -> String {
        let count =
            if self.total > 0 { format!("{} of {}", self.done, self.total) } else { "starting".to_owned() };
        match self.step.as_str() {
            "shadow" => format!("embedding the corpus with the new model: {count} chunks"),
            "candidate" => format!("answering the golden questions as the candidate: {count}"),
            "baseline" => format!("answering them as the active version, to compare: {count}"),
            other => format!("{other}: {count}"),
        }
    }
}

/// One golden question's result at an eval (a version's `evals.results[]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalResultView {
    pub id: String,
    pub question: String,
    pub should_refuse: bool,
    pub answered: bool,
    pub refused: bool,
    pub facts_found: bool,
    pub missing_facts: Vec<String>,
    pub source_cited: Option<bool>,
    pub correct: bool,
    pub latency_ms: f64,
    pub cost_usd: f64,
    #[serde(default)]
    pub error: Option<String>,
}

/// An eval's totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EvalTotalsView {
    pub questions: u64,
    pub correct: u64,
    pub answered: u64,
    pub refused: u64,
    pub wrongly_refused: u64,
    pub wrong_answers: u64,
    pub failed: u64,
    pub cost_usd: f64,
    pub mean_latency_ms: f64,
}

/// The eval gate's comparison of a saved candidate with the version serving.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalGateView {
    pub baseline_version: i64,
    pub baseline: EvalTotalsView,
    pub baseline_results: Vec<EvalResultView>,
    pub passed: bool,
    pub regressions: Vec<String>,
    #[serde(default)]
    pub activated_anyway: Option<EvalOverrideView>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalOverrideView {
    pub by: String,
    pub at: String,
}

/// What a profile version's `evals` holds (the console reads it from the version).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalReportView {
    pub ran_at: String,
    pub set: String,
    pub results: Vec<EvalResultView>,
    pub totals: EvalTotalsView,
    #[serde(default)]
    pub gate: Option<EvalGateView>,
}

impl ProfileVersionView {
    /// The version's eval report, if it has one that reads.
    pub fn eval_report(&self) -> Option<EvalReportView> {
        self.evals.clone().and_then(|value| serde_json::from_value(value).ok())
    }

    /// Kept inactive by the eval gate, and not activated anyway.
    /// Read from the stored verdict alone: a candidate still being judged
    /// has a verdict but no report yet.
    pub fn kept_inactive_by_gate(&self) -> bool {
        let Some(gate) = self.evals.as_ref().and_then(|evals| evals.get("gate")) else {
            return false;
        };
        gate.get("passed").and_then(serde_json::Value::as_bool) == Some(false)
            && gate.get("activated_anyway").is_none_or(serde_json::Value::is_null)
    }
}

/// `POST /admin/profile/evals`: run the golden questions against a version now.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunEvalsRequest {
    /// The version to evaluate; the active one when absent.
    #[serde(default)]
    pub version: Option<i64>,
}

/// The result of `POST /admin/profile/evals` and `lore evals run`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalRunView {
    pub version: i64,
    pub report: EvalReportView,
    /// The version's previous totals on the same golden set, if any.
    pub previous: Option<EvalTotalsView>,
    /// Against `previous`: empty when nothing got worse.
    pub regressions: Vec<String>,
}

/// A pinned answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PinView {
    pub id: String,
    pub question: String,
    pub answer: String,
    pub citations: Vec<super::CitationView>,
    pub created_by: String,
    pub created_at: String,
    /// Set when a cited passage changed: the pin does not serve until re-pinned.
    pub flagged_at: Option<String>,
    pub flag_reason: Option<String>,
    /// Who it is served to: `everyone` or role names separated by commas.
    pub audience: String,
}

/// `POST /admin/pins`: pin an answer to a question (replacing its pin, if any).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinRequest {
    pub question: String,
    pub answer: String,
    /// The citations to serve with it: those of the answer being pinned.
    #[serde(default)]
    pub citations: Vec<super::CitationView>,
    /// Who it is served to: `everyone` (the default) or role names
    /// separated by commas. Either way a caller who may not read a source
    /// it cites is never served it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
}

/// `PUT /admin/profile/persona`, `POST /admin/profile/render` and the
/// wizard's `POST /admin/setup/persona`: a persona and the details that
/// tailor its prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonaRequest {
    pub persona: String,
    #[serde(default)]
    pub details: ProfileDetails,
}

#[cfg(feature = "ssr")]
mod from_engine {
    use super::*;

    impl From<engine::retrieve::RetrievalSettings> for RetrievalSettingsView {
        fn from(s: engine::retrieve::RetrievalSettings) -> Self {
            Self {
                top_k: s.top_k,
                score_cutoff: s.score_cutoff,
                vector_weight: s.vector_weight,
                text_weight: s.text_weight,
                rerank_candidates: s.rerank_candidates,
            }
        }
    }

    /// Engine and wire snapshots share one JSON shape; the engine's parse is
    /// the validation of enum values and unknown fields.
    impl TryFrom<&engine::profile::Snapshot> for ProfileSnapshot {
        type Error = engine::Error;

        fn try_from(snapshot: &engine::profile::Snapshot) -> Result<Self, engine::Error> {
            let value =
                serde_json::to_value(snapshot).map_err(|err| engine::Error::Internal(err.to_string()))?;
            serde_json::from_value(value).map_err(|err| engine::Error::Internal(err.to_string()))
        }
    }

    impl TryFrom<&ProfileSnapshot> for engine::profile::Snapshot {
        type Error = engine::Error;

        fn try_from(snapshot: &ProfileSnapshot) -> Result<Self, engine::Error> {
            let value =
                serde_json::to_value(snapshot).map_err(|err| engine::Error::Internal(err.to_string()))?;
            serde_json::from_value(value).map_err(|err| {
                engine::profile::ProfileError::Invalid(format!("the snapshot is not valid: {err}")).into()
            })
        }
    }

    impl TryFrom<engine::profile::Version> for ProfileVersionView {
        type Error = engine::Error;

        fn try_from(version: engine::profile::Version) -> Result<Self, engine::Error> {
            Ok(ProfileVersionView {
                snapshot: ProfileSnapshot::try_from(&version.snapshot)?,
                version: version.version.into(),
                based_on: version.based_on.map(i64::from),
                active: version.active,
                note: version.note,
                created_by: version.created_by,
                created_at: crate::wire::time(version.created_at),
                evals: version.evals,
                helpful: 0,
                unhelpful: 0,
            })
        }
    }

    impl TryFrom<engine::evals::Served> for ProfileVersionView {
        type Error = engine::Error;

        fn try_from(served: engine::evals::Served) -> Result<Self, engine::Error> {
            Ok(ProfileVersionView {
                helpful: served.helpful,
                unhelpful: served.unhelpful,
                ..ProfileVersionView::try_from(served.version)?
            })
        }
    }

    impl From<engine::judging::Judging> for JudgingView {
        fn from(j: engine::judging::Judging) -> Self {
            let step = match j.step {
                engine::judging::Step::Shadow => "shadow",
                engine::judging::Step::Candidate => "candidate",
                engine::judging::Step::Baseline => "baseline",
            };
            Self {
                id: j.id,
                what: j.what,
                version: j.version.map(i64::from),
                by: j.by,
                step: step.to_owned(),
                done: j.done as u64,
                total: j.total as u64,
                started_at: crate::wire::time(j.started_at),
            }
        }
    }

    impl From<engine::evals::Golden> for GoldenView {
        fn from(g: engine::evals::Golden) -> Self {
            Self {
                id: g.id,
                question: g.question,
                expected_facts: g.expected_facts,
                should_refuse: g.should_refuse,
                expected_source: g.expected_source,
                origin: g.origin.key().to_owned(),
                created_by: g.created_by,
                created_at: crate::wire::time(g.created_at),
                asked_as: g.asked_as,
            }
        }
    }

    impl TryFrom<GoldenRequest> for engine::evals::NewGolden {
        type Error = engine::Error;

        fn try_from(r: GoldenRequest) -> Result<Self, engine::Error> {
            Ok(Self {
                question: r.question,
                expected_facts: r.expected_facts,
                should_refuse: r.should_refuse,
                expected_source: r.expected_source,
                origin: engine::evals::Origin::parse(r.origin.as_deref().unwrap_or("prompt"))?,
                asked_as: r.asked_as,
            })
        }
    }

    /// Engine and wire reports share one JSON shape.
    fn same_shape<T: serde::Serialize, U: serde::de::DeserializeOwned>(
        value: &T,
    ) -> Result<U, engine::Error> {
        let json = serde_json::to_value(value).map_err(|err| engine::Error::Internal(err.to_string()))?;
        serde_json::from_value(json).map_err(|err| engine::Error::Internal(err.to_string()))
    }

    impl TryFrom<engine::evals::Rerun> for EvalRunView {
        type Error = engine::Error;

        fn try_from(r: engine::evals::Rerun) -> Result<Self, engine::Error> {
            Ok(Self {
                version: r.version.into(),
                report: same_shape(&r.report)?,
                previous: r
                    .previous
                    .as_ref()
                    .map(same_shape::<engine::evals::Totals, EvalTotalsView>)
                    .transpose()?,
                regressions: r.regressions,
            })
        }
    }

    impl From<engine::answer::pins::Pin> for PinView {
        fn from(p: engine::answer::pins::Pin) -> Self {
            let (flagged_at, flag_reason) = match p.flagged {
                Some((at, why)) => (Some(crate::wire::time(at)), Some(why)),
                None => (None, None),
            };
            Self {
                id: p.id,
                question: p.question,
                answer: p.answer,
                citations: p.citations.into_iter().map(|c| c.citation.into()).collect(),
                created_by: p.created_by,
                created_at: crate::wire::time(p.created_at),
                flagged_at,
                flag_reason,
                audience: p.audience.to_string(),
            }
        }
    }

    impl From<PinRequest> for engine::answer::pins::NewPin {
        fn from(r: PinRequest) -> Self {
            Self {
                question: r.question,
                answer: r.answer,
                citations: r.citations.into_iter().map(Into::into).collect(),
                audience: r.audience,
            }
        }
    }

    impl From<&engine::profile::Persona> for PersonaView {
        fn from(persona: &engine::profile::Persona) -> Self {
            Self {
                key: persona.key.to_owned(),
                name: persona.name.to_owned(),
                summary: persona.summary.to_owned(),
            }
        }
    }

    impl From<ProfileDetails> for engine::profile::Details {
        fn from(details: ProfileDetails) -> Self {
            Self {
                organisation: details.organisation,
                product: details.product,
                audience: details.audience,
                extra_instructions: details.extra_instructions,
            }
        }
    }
}

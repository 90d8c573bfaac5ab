//! The profile: who Lore answers as, and the immutable versions that serve.
//!
//! - A catalogue of [`Persona`]s gives each kind of deployment a default
//!   prompt and behaviour defaults; optional [`Details`] tailor the prompt.
//! - No profile exists until the first index starts; then [`ensure`] builds
//!   it from the chosen persona (the wizard and the first index call the same
//!   function).
//! - A [`Snapshot`] is everything answering needs: prompt, behaviour,
//!   semantic-cache gates and answer-time retrieval settings. Each save makes
//!   a new immutable `profile_version` row; exactly one is active.
//! - [`save`] switches the active version only after the new one is stored,
//!   and only if the active version is still the one the editor started
//!   from: the conditional update of the `profile` row is the single point
//!   where two saves are ordered. The loser gets
//!   [`ProfileError::VersionConflict`] and nothing is overwritten.
//! - [`restore`] points the profile at a prior version: its whole snapshot
//!   serves at once.
//! - A [`SaveGate`] judges each save when it applies (the golden-question
//!   evals of `engine::evals`, handed down at `Lore::open`): the candidate is stored
//!   first, kept inactive until judged, then activated only when
//!   the gate passed it. A candidate kept inactive needs [`restore`] with
//!   `anyway`, which is recorded in its gate and the audit log. A save the
//!   gate could not judge, or that lost the race to another save meanwhile,
//!   leaves no candidate behind.
//! - With golden questions, binding a model to the generation or escalation
//!   role goes through the same gate ([`bind_model`]): the candidate is the
//!   active snapshot unchanged, naming the binding ([`Rebinding`]); it is
//!   judged with that model in the role, and the binding is made in the
//!   transaction that activates it.

mod binding;
mod gate;
mod personas;
mod versions;

pub use binding::*;
pub use gate::*;
pub use personas::*;
pub use versions::*;

use chrono::Utc;
use entity::{profile, profile_version};
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use serde::{Deserialize, Serialize};

use crate::audit::{self, Actor};
use crate::judging::{self, Step};
use crate::providers::{self, Account, QuickAdd, Role, Target};
use crate::retrieve::RetrievalSettings;
use crate::shadow;
use crate::{Corpus, Error, Result};
use sea_orm::SqlErr;

const PROFILE_ID: &str = "default";

/// Longest prompt accepted (characters).
pub const MAX_PROMPT_CHARS: usize = 20_000;

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The active version moved since the editor loaded its base.
    #[error("version {active} was activated since this edit started from version {base}; reload and reapply your change")]
    VersionConflict { base: i32, active: i32 },
    #[error("no profile yet: it is created when the first index starts")]
    NoProfile,
    #[error("there is no version {0}")]
    UnknownVersion(i32),
    #[error("unknown persona `{0}`")]
    UnknownPersona(String),
    #[error("{0}")]
    Invalid(String),
    /// The candidate answers the golden questions worse than the version serving.
    #[error("version {version} answers the golden questions worse than version {baseline}: {}; activate it anyway to serve it", .regressions.join("; "))]
    EvalRegression { version: i32, baseline: i32, regressions: Vec<String> },
    #[error("there is no golden question `{0}`")]
    UnknownGolden(String),
    #[error("there is no pinned answer `{0}`")]
    UnknownPin(String),
    /// A rating (or a review of one) names a trace id that is no answer Lore
    /// recorded: unknown, an eval's, or recorded before ratings.
    #[error("there is no answer with trace id `{0}` to rate")]
    UnknownAnswer(String),
    /// A rating from someone other than who asked (another key, another
    /// user, another admin).
    #[error("only whoever asked a question may rate its answer")]
    NotYourAnswer,
}

/// Tone of voice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    Neutral,
    Friendly,
    Formal,
    Technical,
}

/// How long answers should be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Length {
    Brief,
    Standard,
    Detailed,
}

/// How citations appear in the answer text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CitationStyle {
    /// `[1]` after the sentence it supports.
    Inline,
    /// A list of sources after the answer.
    Footnotes,
}

/// How an answer is made of the passages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Composition {
    /// Quoted on the embedded model and on on-node models smaller than
    /// [`SMALL_MODEL_PARAMETERS`]; written by the model otherwise.
    #[default]
    Auto,
    /// The model writes the answer in its own words; the grounding check
    /// judges each statement.
    Generated,
    /// The answer is the passages' own sentences, verbatim, chosen by the
    /// model (quote-first): it cannot state a number or a name the passages
    /// do not.
    Quoted,
}

/// Below this many parameters an on-node model answers in quotes when the
/// profile's composition is `auto` (its name says its size: `135m`, `0.5b`).
pub const SMALL_MODEL_PARAMETERS: f64 = 1.0e9;

impl Composition {
    /// Whether answers from `model` (on this node or not) are quoted.
    pub fn quotes(self, model: &str, on_node: bool, embedded: bool) -> bool {
        match self {
            Composition::Generated => false,
            Composition::Quoted => true,
            Composition::Auto => {
                embedded || (on_node && parameters(model).is_some_and(|n| n < SMALL_MODEL_PARAMETERS))
            }
        }
    }
}

/// The parameter count a model's name states (`smollm2-135m-instruct`:
/// 135 million; `qwen2.5-0.5b`: half a billion), if it states one.
pub fn parameters(model: &str) -> Option<f64> {
    model.to_lowercase().split(|c: char| !(c.is_ascii_alphanumeric() || c == '.')).find_map(|part| {
        let (number, scale) = match part.strip_suffix('b') {
            Some(number) => (number, 1.0e9),
            None => (part.strip_suffix('m')?, 1.0e6),
        };
        let n: f64 = number.parse().ok()?;
        (n > 0.0 && number.starts_with(|c: char| c.is_ascii_digit())).then_some(n * scale)
    })
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Behavior {
    pub tone: Tone,
    pub length: Length,
    pub citation_style: CitationStyle,
    /// Said when nothing retrievable answers the question.
    pub refusal: String,
    /// Versions saved before it had none: `auto`.
    #[serde(default)]
    pub composition: Composition,
}

/// When a semantic-cache entry may answer instead of the pipeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheGates {
    pub enabled: bool,
    /// Cosine similarity of the questions, 0 to 1.
    pub min_similarity: f32,
    /// Maximum age of an entry for a `medium` volatility source; `high`
    /// quarters it, `low` multiplies it by 7, `static` by 30.
    pub max_age_seconds: u64,
    /// Only grounded answers are cached.
    pub grounded_only: bool,
}

/// Optional details that tailor the persona's prompt.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Details {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organisation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_instructions: Option<String>,
}

/// A complete serving snapshot: what one ProfileVersion holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    pub persona: String,
    #[serde(default)]
    pub details: Details,
    /// The system prompt. Passages and the question are appended at answer time.
    pub prompt: String,
    pub behavior: Behavior,
    pub cache: CacheGates,
    pub retrieval: RetrievalSettings,
}

/// Checks a snapshot's values (the prompt, the refusal, cache gates and
/// retrieval settings) before anything stores it.
pub fn validate(snapshot: &Snapshot) -> Result<()> {
    let invalid = |why: &str| -> Result<()> { Err(ProfileError::Invalid(why.to_owned()).into()) };
    persona(&snapshot.persona)?;
    let prompt = snapshot.prompt.trim();
    if prompt.is_empty() {
        return invalid("the prompt cannot be empty");
    }
    if prompt.chars().count() > MAX_PROMPT_CHARS {
        return invalid(&format!("the prompt is longer than {MAX_PROMPT_CHARS} characters"));
    }
    if snapshot.behavior.refusal.trim().is_empty() || snapshot.behavior.refusal.chars().count() > 1000 {
        return invalid("the refusal wording needs 1 to 1000 characters");
    }
    // Every number is checked finite and in range here, before anything is
    // stored: JSON has no infinity, so a stored infinity reads back as null
    // and the version could never be read again. `contains` is false for NaN.
    let gates = &snapshot.cache;
    if !(0.5..=1.0).contains(&gates.min_similarity) {
        return invalid("the cache's minimum similarity must be between 0.5 and 1");
    }
    if gates.max_age_seconds == 0 || gates.max_age_seconds > 90 * 86_400 {
        return invalid("the cache's maximum age must be between 1 second and 90 days");
    }
    let r = &snapshot.retrieval;
    if !(1..=crate::retrieve::MAX_TOP_K).contains(&r.top_k) {
        return invalid(&format!("top-k must be between 1 and {}", crate::retrieve::MAX_TOP_K));
    }
    if !(0.0..=1.0).contains(&r.score_cutoff) {
        return invalid("the score cutoff must be between 0 and 1");
    }
    if !(0.0..=1.0).contains(&r.vector_weight)
        || !(0.0..=1.0).contains(&r.text_weight)
        || r.vector_weight + r.text_weight <= 0.0
    {
        return invalid("the fusion weights must each be between 0 and 1, and not both zero");
    }
    if !(1..=crate::retrieve::MAX_RERANK_CANDIDATES).contains(&r.rerank_candidates) {
        return invalid(&format!(
            "the rerank candidates must be between 1 and {}",
            crate::retrieve::MAX_RERANK_CANDIDATES
        ));
    }
    Ok(())
}

/// A stored version with its parsed snapshot.
#[derive(Clone, Debug, PartialEq)]
pub struct Version {
    pub id: String,
    pub version: i32,
    pub based_on: Option<i32>,
    pub snapshot: Snapshot,
    pub note: Option<String>,
    pub created_by: String,
    pub created_at: chrono::DateTime<Utc>,
    pub evals: Option<serde_json::Value>,
    /// The model binding this version stands for, if it is one.
    pub binding: Option<Rebinding>,
    pub active: bool,
    /// When this version last became the active one: set by [`active`]. A
    /// cached answer made before then (under an earlier activation of the
    /// same version, since restored) no longer serves.
    pub activated_at: Option<chrono::DateTime<Utc>>,
    /// Set on the version that serves because the active one cannot be read:
    /// the active version's number and why it cannot be read.
    pub serving_instead_of: Option<(i32, String)>,
}

fn version_of(row: profile_version::Model, active_id: &str) -> Result<Version> {
    let snapshot = serde_json::from_value(row.snapshot)
        .map_err(|err| Error::Internal(format!("profile version {} is unreadable: {err}", row.version)))?;
    let binding = row.binding.as_ref().map(Rebinding::read).transpose()?;
    Ok(Version {
        binding,
        active: row.id == active_id,
        id: row.id,
        version: row.version,
        based_on: row.based_on,
        snapshot,
        note: row.note,
        created_by: row.created_by,
        created_at: row.created_at,
        evals: row.evals,
        activated_at: None,
        serving_instead_of: None,
    })
}

/// A snapshot as stored: refused unless it reads back as the same snapshot,
/// so no save can store a version that could not be read again.
fn stored_form(snapshot: &Snapshot) -> Result<serde_json::Value> {
    let value = serde_json::to_value(snapshot).map_err(|err| Error::Internal(err.to_string()))?;
    match serde_json::from_value::<Snapshot>(value.clone()) {
        Ok(back) if back == *snapshot => Ok(value),
        _ => Err(ProfileError::Invalid(
            "a value does not survive being stored (a number out of range?)".into(),
        )
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_on_node_models_answer_in_quotes_unless_the_profile_says_otherwise() {
        assert_eq!(parameters("smollm2-135m-instruct"), Some(135.0e6));
        assert_eq!(parameters("SmolLM2-135M-Instruct.Q4_1.gguf"), Some(135.0e6));
        assert_eq!(parameters("qwen2.5-0.5b-instruct"), Some(0.5e9));
        assert_eq!(parameters("llama-3.1-8b-instruct"), Some(8.0e9));
        assert_eq!(parameters("gpt-4o-mini"), None);
        let auto = Composition::Auto;
        assert!(auto.quotes("gemma-3-270m", true, false));
        assert!(!auto.quotes("gemma-3-270m", false, false), "a hosted model writes");
        assert!(!auto.quotes("llama-3.1-8b-instruct", true, false));
        assert!(!auto.quotes("phi-mini", true, false), "no size stated: written");
        assert!(auto.quotes("any.gguf", true, true), "the embedded model quotes");
        assert!(!Composition::Generated.quotes("smollm2-135m-instruct", true, true));
        assert!(Composition::Quoted.quotes("gpt-4o", false, false));
        // Versions saved before the setting read as `auto`.
        let mut stored =
            serde_json::to_value(default_snapshot("documentation_assistant", Details::default()).unwrap())
                .unwrap();
        stored["behavior"].as_object_mut().unwrap().remove("composition");
        let read: Snapshot = serde_json::from_value(stored).unwrap();
        assert_eq!(read.behavior.composition, Composition::Auto);
    }

    #[test]
    fn every_persona_renders_a_prompt_that_names_its_refusal() {
        for persona in &PERSONAS {
            let snapshot = default_snapshot(persona.key, Details::default()).unwrap();
            assert!(snapshot.prompt.contains(persona.refusal), "{}", persona.key);
            validate(&snapshot).unwrap();
        }
    }

    #[test]
    fn details_tailor_the_prompt() {
        let details = Details {
            organisation: Some("Acme".into()),
            product: Some("Rocket Skates".into()),
            audience: Some("new customers".into()),
            extra_instructions: Some("Never discuss competitors.".into()),
        };
        let prompt = render_prompt(persona("customer_support").unwrap(), &details);
        assert!(prompt.starts_with("You are a customer-support agent for Acme."));
        assert!(prompt.contains("Rocket Skates"));
        assert!(prompt.contains("Your readers are new customers."));
        assert!(prompt.ends_with("Never discuss competitors."));
        let plain = render_prompt(persona("customer_support").unwrap(), &Details::default());
        assert!(plain.contains("this organisation"));
    }

    #[test]
    fn validation_refuses_broken_snapshots() {
        let good = default_snapshot("it_helpdesk", Details::default()).unwrap();
        let mut empty_prompt = good.clone();
        empty_prompt.prompt = "  ".into();
        assert!(validate(&empty_prompt).is_err());
        let mut gate = good.clone();
        gate.cache.min_similarity = 1.5;
        assert!(validate(&gate).is_err());
        let mut top_k = good;
        top_k.retrieval.top_k = 0;
        assert!(validate(&top_k).is_err());
    }
}

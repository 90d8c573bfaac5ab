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
//!   evals of the `evals` module, wired in by `Lore`): the candidate is stored
//!   first, inactive and marked held until judged, then activated only when
//!   the gate passed it. A candidate kept inactive needs [`restore`] with
//!   `anyway`, which is recorded in its gate and the audit log. A save the
//!   gate could not judge, or that lost the race to another save meanwhile,
//!   leaves no candidate behind.
//! - With golden questions, binding a model to the generation or escalation
//!   role goes through the same gate ([`bind_model`]): the candidate is the
//!   active snapshot unchanged, naming the binding ([`Rebinding`]); it is
//!   judged with that model in the role, and the binding is made in the
//!   transaction that activates it.

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
use crate::{Error, Lore, Result};
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

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Behavior {
    pub tone: Tone,
    pub length: Length,
    pub citation_style: CitationStyle,
    /// Said when nothing retrievable answers the question.
    pub refusal: String,
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

/// One entry of the persona catalogue.
#[derive(Clone, Copy, Debug)]
pub struct Persona {
    pub key: &'static str,
    pub name: &'static str,
    pub summary: &'static str,
    /// The role sentence the prompt opens with; `{org}` and `{product}` are filled in.
    role: &'static str,
    pub tone: Tone,
    pub length: Length,
    pub citation_style: CitationStyle,
    pub refusal: &'static str,
    /// Semantic-cache similarity gate: stricter where wording matters more.
    pub min_similarity: f32,
    pub max_age_seconds: u64,
}

pub static PERSONAS: [Persona; 5] = [
    Persona {
        key: "documentation_assistant",
        name: "Documentation assistant",
        summary: "Answers questions about {product} from its documentation, precisely and with citations.",
        role: "You are the documentation assistant of {org}. You answer questions about {product} using only the documentation passages provided.",
        tone: Tone::Technical,
        length: Length::Standard,
        citation_style: CitationStyle::Inline,
        refusal: "I could not find this in the documentation.",
        min_similarity: 0.92,
        max_age_seconds: 86_400,
    },
    Persona {
        key: "customer_support",
        name: "Customer-support agent",
        summary: "Helps customers with orders, billing and troubleshooting, kindly and to the point.",
        role: "You are a customer-support agent for {org}. You help customers with {product} using only the help-centre passages provided.",
        tone: Tone::Friendly,
        length: Length::Brief,
        citation_style: CitationStyle::Footnotes,
        refusal: "I'm sorry, I couldn't find an answer to that in our help centre. A member of our team can help you further.",
        min_similarity: 0.90,
        max_age_seconds: 21_600,
    },
    Persona {
        key: "it_helpdesk",
        name: "Internal IT helpdesk",
        summary: "Walks employees through IT policies, accounts, devices and access requests.",
        role: "You are the internal IT helpdesk of {org}. You help employees with accounts, devices, software and access, using only the IT knowledge-base passages provided.",
        tone: Tone::Neutral,
        length: Length::Standard,
        citation_style: CitationStyle::Inline,
        refusal: "I couldn't find this in the IT knowledge base. Please open a ticket with the IT team.",
        min_similarity: 0.90,
        max_age_seconds: 86_400,
    },
    Persona {
        key: "sales_engineer",
        name: "Sales engineer",
        summary: "Explains what {product} does, how it fits and what it costs, without over-promising.",
        role: "You are a sales engineer at {org}. You explain the capabilities, integrations and pricing of {product} using only the passages provided, and never promise what they do not say.",
        tone: Tone::Formal,
        length: Length::Standard,
        citation_style: CitationStyle::Footnotes,
        refusal: "I don't have documented information on that; our sales team can confirm the details.",
        min_similarity: 0.93,
        max_age_seconds: 43_200,
    },
    Persona {
        key: "devrel_guide",
        name: "Developer-relations guide",
        summary: "Helps developers get started with {product}'s APIs and SDKs, with code where the docs have it.",
        role: "You are a developer-relations guide for {org}. You help developers build with {product}'s APIs and SDKs using only the passages provided, quoting code from them where it helps.",
        tone: Tone::Friendly,
        length: Length::Detailed,
        citation_style: CitationStyle::Inline,
        refusal: "I couldn't find that in the developer documentation.",
        min_similarity: 0.92,
        max_age_seconds: 86_400,
    },
];

pub fn persona(key: &str) -> Result<&'static Persona> {
    PERSONAS.iter().find(|p| p.key == key).ok_or_else(|| ProfileError::UnknownPersona(key.to_owned()).into())
}

fn non_empty(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// The persona's prompt, tailored by the details.
pub fn render_prompt(persona: &Persona, details: &Details) -> String {
    let org = non_empty(&details.organisation).unwrap_or("this organisation");
    let product = non_empty(&details.product).unwrap_or("its products");
    let mut prompt = persona.role.replace("{org}", org).replace("{product}", product);
    if let Some(audience) = non_empty(&details.audience) {
        prompt.push_str(&format!(" Your readers are {audience}."));
    }
    prompt.push_str(match persona.tone {
        Tone::Neutral => " Write plainly.",
        Tone::Friendly => " Be warm and encouraging, and get to the point.",
        Tone::Formal => " Write in a formal, precise register.",
        Tone::Technical => " Be exact; use the product's own terms.",
    });
    prompt.push_str(match persona.length {
        Length::Brief => " Keep answers to two or three sentences.",
        Length::Standard => " Keep answers to a short paragraph or a short list of steps.",
        Length::Detailed => " Give complete answers, with steps and examples where the passages have them.",
    });
    prompt.push_str(match persona.citation_style {
        CitationStyle::Inline => {
            " After each statement, cite the passage that supports it by its number in square brackets, like [1]."
        }
        CitationStyle::Footnotes => {
            " Cite the passages you used by their numbers in square brackets, like [1], and list them after the answer."
        }
    });
    prompt.push_str(
        " Say only what the passages support. If they do not answer the question, reply exactly: \"",
    );
    prompt.push_str(persona.refusal);
    prompt.push('"');
    if let Some(extra) = non_empty(&details.extra_instructions) {
        prompt.push_str("\n\n");
        prompt.push_str(extra);
    }
    prompt
}

/// The snapshot a new profile starts from.
pub fn default_snapshot(persona_key: &str, details: Details) -> Result<Snapshot> {
    let persona = persona(persona_key)?;
    Ok(Snapshot {
        persona: persona.key.to_owned(),
        prompt: render_prompt(persona, &details),
        details,
        behavior: Behavior {
            tone: persona.tone,
            length: persona.length,
            citation_style: persona.citation_style,
            refusal: persona.refusal.to_owned(),
        },
        cache: CacheGates {
            enabled: true,
            min_similarity: persona.min_similarity,
            max_age_seconds: persona.max_age_seconds,
            grounded_only: true,
        },
        retrieval: RetrievalSettings::default(),
    })
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

/// What judges a saved candidate before it serves. The profile stores what
/// the gate returns and never reads it beyond the verdict (its `gate`).
#[async_trait::async_trait]
pub trait SaveGate: Send + Sync {
    /// Whether saves are judged at all.
    async fn applies(&self, lore: &Lore) -> Result<bool>;
    /// Judges `candidate` beside `serving`, telling `progress` how far it
    /// got; `None` when there turned out to be nothing to judge with.
    async fn judge(
        &self,
        lore: &Lore,
        candidate: &Version,
        serving: &Version,
        progress: &judging::Tracker,
    ) -> Result<Option<Judged>>;
}

/// A gate's verdict on a candidate.
pub struct Judged {
    /// What the candidate's `evals` holds, its verdict under `gate`.
    pub evals: serde_json::Value,
    /// Why it is worse (none: it passed).
    pub regressions: Vec<String>,
}

/// The verdict in `evals` of a version the gate kept inactive and no admin
/// activated anyway: the version it was compared with, and why.
pub fn held(evals: Option<&serde_json::Value>) -> Option<(i32, Vec<String>)> {
    let gate = evals?.get("gate")?;
    if gate.get("passed")?.as_bool()? || gate.get("activated_anyway").is_some_and(|by| !by.is_null()) {
        return None;
    }
    let baseline =
        gate.get("baseline_version").and_then(serde_json::Value::as_i64).and_then(|b| i32::try_from(b).ok());
    let regressions = gate.get("regressions").and_then(|r| serde_json::from_value(r.clone()).ok());
    Some((baseline.unwrap_or_default(), regressions.unwrap_or_default()))
}

/// The model binding a version stands for: its snapshot is its base's,
/// and activating it binds `role` to the target (or, for the embedding
/// role, unbinds it: back to the on-node model).
#[derive(Clone, Debug, PartialEq)]
pub struct Rebinding {
    pub role: Role,
    /// `None`: the role is unbound.
    pub target_id: Option<String>,
    /// The target's model when the version was stored (for display).
    pub model: String,
    /// For the embedding role: the chunk table of the shadow index it was
    /// judged on, which its activation adopts (see [`shadow`]).
    pub index: Option<String>,
}

impl Rebinding {
    fn stored(&self) -> serde_json::Value {
        let mut stored =
            serde_json::json!({"role": self.role.key(), "target_id": self.target_id, "model": self.model});
        if let (Some(index), Some(object)) = (&self.index, stored.as_object_mut()) {
            object.insert("index".into(), serde_json::json!(index));
        }
        stored
    }

    fn read(value: &serde_json::Value) -> Result<Self> {
        let field = |name: &str| value.get(name).and_then(serde_json::Value::as_str);
        let target_id = match value.get("target_id") {
            Some(serde_json::Value::Null) => Some(None),
            Some(serde_json::Value::String(id)) => Some(Some(id.clone())),
            _ => None,
        };
        match (field("role").map(Role::parse), target_id, field("model")) {
            (Some(Ok(role)), Some(target_id), Some(model)) => Ok(Rebinding {
                role,
                target_id,
                model: model.to_owned(),
                index: field("index").map(str::to_owned),
            }),
            _ => Err(Error::Internal(format!("a version's binding is unreadable: {value}"))),
        }
    }
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

/// Builds the profile from `persona` unless one exists; returns the active
/// version either way. The wizard's persona step and the first index call this.
pub async fn ensure(lore: &Lore, actor: &Actor, persona_key: &str, details: Details) -> Result<Version> {
    if let Some(active) = active(lore).await? {
        return Ok(active);
    }
    let snapshot = default_snapshot(persona_key, details)?;
    let now = Utc::now();
    let id = uuid::Uuid::new_v4().to_string();
    let txn = crate::store::begin_write(&lore.db).await?;
    // The profile row first: a concurrent `ensure` fails on its primary key
    // before writing a version, and then reads the winner's.
    let created = profile::ActiveModel {
        id: Set(PROFILE_ID.to_owned()),
        active_version_id: Set(id.clone()),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&txn)
    .await;
    if created.is_err() {
        drop(txn);
        return active(lore).await?.ok_or_else(|| Error::Internal("the profile vanished".into()));
    }
    let row = insert_version(
        &txn,
        &id,
        NewRow {
            version: 1,
            based_on: None,
            snapshot: &snapshot,
            note: Some("created from the persona"),
            binding: None,
        },
        actor,
    )
    .await?;
    audit::record(&txn, actor, "profile.created", Some(&id), serde_json::json!({"persona": persona_key}))
        .await?;
    txn.commit().await?;
    version_of(row, &id)
}

async fn insert_version(
    db: &impl sea_orm::ConnectionTrait,
    id: &str,
    new: NewRow<'_>,
    actor: &Actor,
) -> Result<profile_version::Model> {
    let NewRow { version, based_on, snapshot, note, binding } = new;
    Ok(profile_version::ActiveModel {
        id: Set(id.to_owned()),
        version: Set(version),
        based_on: Set(based_on),
        snapshot: Set(stored_form(snapshot)?),
        note: Set(note.map(str::to_owned)),
        created_by: Set(actor.label()),
        created_at: Set(Utc::now()),
        evals: Set(None),
        binding: Set(binding.map(Rebinding::stored)),
    }
    .insert(db)
    .await?)
}

/// A version row to store.
struct NewRow<'a> {
    version: i32,
    based_on: Option<i32>,
    snapshot: &'a Snapshot,
    note: Option<&'a str>,
    /// The model binding it stands for.
    binding: Option<&'a Rebinding>,
}

/// The version answers are made with, or `None` before the first index:
/// the active one, or, when the active one cannot be read (a record written
/// by another release, or edited by hand), the newest version that can, with
/// [`Version::serving_instead_of`] saying so. A record that cannot be read
/// never takes the answer path down; Readiness reports it, and saving or
/// restoring a version on the Prompt screen makes a readable one active.
pub async fn active(lore: &Lore) -> Result<Option<Version>> {
    let Some(profile) = profile::Entity::find_by_id(PROFILE_ID).one(&lore.db).await? else {
        return Ok(None);
    };
    let row = profile_version::Entity::find_by_id(profile.active_version_id.clone())
        .one(&lore.db)
        .await?
        .ok_or_else(|| Error::Internal("the active profile version is missing".into()))?;
    let number = row.version;
    let mut version = match version_of(row, &profile.active_version_id) {
        Ok(version) => version,
        Err(err) => {
            let why = err.to_string();
            let mut fallback = newest_readable(lore).await?.ok_or_else(|| {
                Error::Internal(format!("no profile version can be read (the active one: {why})"))
            })?;
            tracing::error!(active = number, serving = fallback.version, error = %why, "the active profile version cannot be read; answering with the newest readable one");
            fallback.serving_instead_of = Some((number, why));
            fallback
        }
    };
    // Every change of the active version (save, restore) stamps `updated_at`.
    version.activated_at = Some(profile.updated_at);
    Ok(Some(version))
}

/// The newest version whose snapshot reads and validates.
async fn newest_readable(lore: &Lore) -> Result<Option<Version>> {
    let rows =
        profile_version::Entity::find().order_by_desc(profile_version::Column::Version).all(&lore.db).await?;
    Ok(rows
        .into_iter()
        .filter_map(|row| version_of(row, "").ok())
        // A candidate the gate kept inactive never serves by default.
        .find(|version| validate(&version.snapshot).is_ok() && held(version.evals.as_ref()).is_none()))
}

/// The id a save or restore based on version `base` must find active: the
/// base's own, or, while the active version cannot be read and `base` is the
/// one serving instead, the unreadable active one (so the console, which
/// shows the serving version, can replace it).
async fn expected_active_id(lore: &Lore, base: &profile_version::Model) -> Result<String> {
    if let Some(serving) = active(lore).await? {
        if serving.serving_instead_of.is_some() && serving.version == base.version {
            if let Some(profile) = profile::Entity::find_by_id(PROFILE_ID).one(&lore.db).await? {
                return Ok(profile.active_version_id);
            }
        }
    }
    Ok(base.id.clone())
}

/// Every version, newest first.
pub async fn versions(lore: &Lore) -> Result<Vec<Version>> {
    let Some(profile) = profile::Entity::find_by_id(PROFILE_ID).one(&lore.db).await? else {
        return Ok(Vec::new());
    };
    let rows =
        profile_version::Entity::find().order_by_desc(profile_version::Column::Version).all(&lore.db).await?;
    // A version that cannot be read is left out (and logged), so the
    // history stays usable for restoring one that can.
    Ok(rows
        .into_iter()
        .filter_map(|row| {
            let number = row.version;
            version_of(row, &profile.active_version_id)
                .inspect_err(
                    |err| tracing::warn!(version = number, error = %err, "a profile version cannot be read"),
                )
                .ok()
        })
        .collect())
}

pub async fn version(lore: &Lore, number: i32) -> Result<Version> {
    let profile =
        profile::Entity::find_by_id(PROFILE_ID).one(&lore.db).await?.ok_or(ProfileError::NoProfile)?;
    let row = profile_version::Entity::find()
        .filter(profile_version::Column::Version.eq(number))
        .one(&lore.db)
        .await?
        .ok_or(ProfileError::UnknownVersion(number))?;
    version_of(row, &profile.active_version_id)
}

/// Stores `snapshot` as a new version and activates it, provided version
/// `base` is still the active one and, with golden questions present, the
/// new version answers them no worse than the active one (see
/// the `evals` module); a worse one is returned stored but inactive, its
/// `evals` saying why.
pub async fn save(
    lore: &Lore,
    actor: &Actor,
    base: i32,
    snapshot: Snapshot,
    note: Option<String>,
) -> Result<Version> {
    validate(&snapshot)?;
    let note = note.map(|n| n.trim().chars().take(200).collect::<String>()).filter(|n| !n.is_empty());
    let base_row = profile_version::Entity::find()
        .filter(profile_version::Column::Version.eq(base))
        .one(&lore.db)
        .await?
        .ok_or(ProfileError::UnknownVersion(base))?;
    let expected = expected_active_id(lore, &base_row).await?;
    if lore.save_gate.applies(lore).await? {
        let (lore, actor) = (lore.clone(), actor.clone());
        return to_the_end(async move {
            let what = note.clone().unwrap_or_else(|| format!("A change to version {base}"));
            let progress = judging::Tracker::start(&lore.db, &what, &actor.label(), Step::Candidate).await?;
            let candidate = Candidate { snapshot, note, binding: None };
            let saved = save_gated(&lore, &actor, base, expected, candidate, &progress).await;
            progress.finish().await;
            saved
        })
        .await;
    }
    let id = uuid::Uuid::new_v4().to_string();
    let txn = crate::store::begin_write(&lore.db).await?;
    // The write comes first so that the transaction holds the write lock
    // before it reads anything: two saves are ordered right here.
    if !point_at(&txn, &id, Some(&expected)).await? {
        txn.rollback().await?;
        return Err(conflict(lore, base).await);
    }
    let next = next_number(&txn).await?;
    let row = insert_version(
        &txn,
        &id,
        NewRow {
            version: next,
            based_on: Some(base),
            snapshot: &snapshot,
            note: note.as_deref(),
            binding: None,
        },
        actor,
    )
    .await?;
    audit::record(
        &txn,
        actor,
        "profile.saved",
        Some(&id),
        serde_json::json!({"version": next, "based_on": base}),
    )
    .await?;
    txn.commit().await?;
    version_of(row, &id)
}

/// The gated save: the candidate is stored inactive (held until judged),
/// judged beside the active version, and activated only if it passed.
/// `progress` hears how far the judging got.
async fn save_gated(
    lore: &Lore,
    actor: &Actor,
    base: i32,
    expected: String,
    candidate: Candidate,
    progress: &judging::Tracker,
) -> Result<Version> {
    let Candidate { snapshot, note, binding } = candidate;
    let serving = active(lore).await?.ok_or(ProfileError::NoProfile)?;
    let current =
        profile::Entity::find_by_id(PROFILE_ID).one(&lore.db).await?.ok_or(ProfileError::NoProfile)?;
    // Fail fast: judging takes a while, and a stale editor loses anyway.
    if current.active_version_id != expected {
        return Err(ProfileError::VersionConflict { base, active: serving.version }.into());
    }
    // Held until judged: a restore meanwhile (or after a crash) needs `anyway`.
    let pending = serde_json::json!({"gate": {
        "baseline_version": serving.version,
        "passed": false,
        "regressions": ["its evals have not finished"],
    }});
    let id = uuid::Uuid::new_v4().to_string();
    let txn = crate::store::begin_write(&lore.db).await?;
    let next = next_number(&txn).await?;
    let inserted = insert_version(
        &txn,
        &id,
        NewRow {
            version: next,
            based_on: Some(base),
            snapshot: &snapshot,
            note: note.as_deref(),
            binding: binding.as_ref(),
        },
        actor,
    )
    .await;
    let row = match inserted {
        Ok(row) => row,
        // Another save took the number meanwhile: it won the race.
        Err(Error::Database(err)) if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
            drop(txn);
            return Err(conflict(lore, base).await);
        }
        Err(err) => return Err(err),
    };
    set_evals(&txn, &id, Some(pending)).await?;
    txn.commit().await?;
    let candidate = version_of(row, "")?;
    progress.candidate(candidate.version);
    let judged = match lore.save_gate.judge(lore, &candidate, &serving, progress).await {
        Ok(judged) => judged,
        Err(err) => {
            discard(lore, &id).await;
            return Err(err);
        }
    };
    let regressions = judged.as_ref().map(|j| j.regressions.clone()).unwrap_or_default();
    set_evals(&lore.db, &id, judged.map(|j| j.evals)).await?;
    let stored = version(lore, next).await?;
    if !regressions.is_empty() {
        tracing::info!(
            version = next,
            baseline = serving.version,
            ?regressions,
            "the save gate kept a candidate inactive"
        );
        audit::record(
            &lore.db,
            actor,
            "profile.candidate_held",
            Some(&id),
            serde_json::json!({"version": next, "based_on": base, "regressions": regressions}),
        )
        .await?;
        return Ok(stored);
    }
    match activate(lore, actor, stored, expected, base, "profile.saved").await {
        Ok(activated) => Ok(activated),
        Err(err) => {
            discard(lore, &id).await;
            Err(err)
        }
    }
}

/// A version to store and judge before it may serve.
struct Candidate {
    snapshot: Snapshot,
    note: Option<String>,
    /// The model binding the candidate stands for, if any.
    binding: Option<Rebinding>,
}

/// The number the next version takes.
async fn next_number(db: &impl ConnectionTrait) -> Result<i32> {
    let newest =
        profile_version::Entity::find().order_by_desc(profile_version::Column::Version).one(db).await?;
    Ok(newest.map(|row| row.version + 1).unwrap_or(1))
}

/// Removes a candidate that never served (a save that failed after storing it).
async fn discard(lore: &Lore, id: &str) {
    let removed = profile_version::Entity::delete_by_id(id.to_owned()).exec(&lore.db).await;
    if let Err(err) = removed {
        tracing::warn!(error = %err, version = id, "a refused save's candidate could not be removed");
    }
}

async fn set_evals(db: &impl ConnectionTrait, id: &str, evals: Option<serde_json::Value>) -> Result<()> {
    profile_version::Entity::update_many()
        .col_expr(profile_version::Column::Evals, Expr::value(evals))
        .filter(profile_version::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// Points the profile at version `id`, provided the active version is
/// still `expected` (when given): the one conditional write that orders
/// saves, activations and restores. `false`: another became active meanwhile.
async fn point_at(db: &impl ConnectionTrait, id: &str, expected: Option<&str>) -> Result<bool> {
    let mut update = profile::Entity::update_many()
        .col_expr(profile::Column::ActiveVersionId, Expr::value(id.to_owned()))
        .col_expr(profile::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(profile::Column::Id.eq(PROFILE_ID));
    if let Some(expected) = expected {
        update = update.filter(profile::Column::ActiveVersionId.eq(expected));
    }
    Ok(update.exec(db).await?.rows_affected == 1)
}

/// The conflict a save based on version `base` lost.
async fn conflict(lore: &Lore, base: i32) -> Error {
    match active(lore).await {
        Ok(active) => {
            ProfileError::VersionConflict { base, active: active.map(|v| v.version).unwrap_or_default() }
                .into()
        }
        Err(err) => err,
    }
}

/// Makes `candidate` active if the active version is still `expected`.
async fn activate(
    lore: &Lore,
    actor: &Actor,
    candidate: Version,
    expected: String,
    base: i32,
    action: &str,
) -> Result<Version> {
    let binding = match &candidate.binding {
        Some(binding) => Some(bindable(lore, binding).await?),
        None => None,
    };
    let txn = crate::store::begin_write(&lore.db).await?;
    if !point_at(&txn, &candidate.id, Some(&expected)).await? {
        txn.rollback().await?;
        return Err(conflict(lore, base).await);
    }
    if let Some(binding) = &binding {
        binding.make_in(&txn, lore, actor).await?;
    }
    audit::record(
        &txn,
        actor,
        action,
        Some(&candidate.id),
        serde_json::json!({"version": candidate.version, "based_on": base}),
    )
    .await?;
    txn.commit().await?;
    if let Some(binding) = &binding {
        binding.made(lore).await;
    }
    Ok(Version { active: true, ..candidate })
}

/// Activates version `number` (its whole snapshot at once). `expected_active`,
/// when given, guards like [`save`]'s base. A version the eval gate kept
/// inactive needs `anyway`, which is recorded in its gate and the audit log.
pub async fn restore(
    lore: &Lore,
    actor: &Actor,
    number: i32,
    expected_active: Option<i32>,
    anyway: bool,
) -> Result<Version> {
    let target = profile_version::Entity::find()
        .filter(profile_version::Column::Version.eq(number))
        .one(&lore.db)
        .await?
        .ok_or(ProfileError::UnknownVersion(number))?;
    let blocked = held(target.evals.as_ref());
    if let Some((baseline, regressions)) = blocked.clone() {
        if !anyway {
            return Err(ProfileError::EvalRegression { version: number, baseline, regressions }.into());
        }
    }
    let overriding = blocked.is_some();
    // Checked before anything changes: a target gone or no longer ready
    // refuses the restore.
    let binding = match target.binding.as_ref().map(Rebinding::read).transpose()? {
        Some(binding) => Some(bindable(lore, &binding).await?),
        None => None,
    };
    let mut expected_id = None;
    if let Some(expected) = expected_active {
        let expected_row = profile_version::Entity::find()
            .filter(profile_version::Column::Version.eq(expected))
            .one(&lore.db)
            .await?
            .ok_or(ProfileError::UnknownVersion(expected))?;
        expected_id = Some(expected_active_id(lore, &expected_row).await?);
    }
    let txn = crate::store::begin_write(&lore.db).await?;
    if !point_at(&txn, &target.id, expected_id.as_deref()).await? {
        txn.rollback().await?;
        return match active(lore).await? {
            None => Err(ProfileError::NoProfile.into()),
            Some(active) => Err(ProfileError::VersionConflict {
                base: expected_active.unwrap_or_default(),
                active: active.version,
            }
            .into()),
        };
    }
    if let Some(binding) = &binding {
        binding.make_in(&txn, lore, actor).await?;
    }
    let action = if overriding { "profile.activated_anyway" } else { "profile.restored" };
    audit::record(&txn, actor, action, Some(&target.id), serde_json::json!({"version": number})).await?;
    let mut target = target;
    if overriding {
        let mut value = target.evals.clone().unwrap_or_default();
        if let Some(gate) = value.get_mut("gate").and_then(serde_json::Value::as_object_mut) {
            gate.insert(
                "activated_anyway".into(),
                serde_json::json!({"by": actor.label(), "at": Utc::now()}),
            );
        }
        set_evals(&txn, &target.id, Some(value.clone())).await?;
        target.evals = Some(value);
    }
    txn.commit().await?;
    if let Some(binding) = &binding {
        binding.made(lore).await;
    }
    let id = target.id.clone();
    version_of(target, &id)
}

/// A version's binding, checked before an activation changes anything.
struct Bindable {
    role: Role,
    /// `None`: the activation unbinds the role.
    target: Option<Target>,
    /// For the embedding role: the candidate's shadow index, which becomes
    /// the active one with the binding.
    adoption: Option<shadow::Adoption>,
}

impl Bindable {
    /// Binds the role (and adopts the shadow index) in the activation's transaction.
    async fn make_in(&self, txn: &impl ConnectionTrait, lore: &Lore, actor: &Actor) -> Result<()> {
        match &self.target {
            Some(target) => {
                providers::bind_in(txn, actor, self.role, target, lore.settings.providers.probe_max_age_days)
                    .await?
            }
            None => providers::unbind_in(txn, actor, self.role).await?,
        }
        if let Some(adoption) = &self.adoption {
            shadow::adopt_in(txn, &actor.label(), adoption).await?;
        }
        Ok(())
    }

    /// After the activation committed.
    async fn made(&self, lore: &Lore) {
        if self.adoption.is_some() {
            if let Err(err) = shadow::adopted(lore).await {
                tracing::warn!(error = %err, "the new embedding model serves, but its full reindex was not queued");
            }
        } else if self.role == Role::Embedding {
            lore.announce(crate::cluster::Change::Embedding).await;
        }
    }
}

/// The target a version's binding names, checked bindable now, with the
/// shadow index an embedding binding adopts.
async fn bindable(lore: &Lore, binding: &Rebinding) -> Result<Bindable> {
    let target = match &binding.target_id {
        Some(id) => {
            let target = providers::target(lore, id).await?;
            providers::check_bindable(binding.role, &target, lore.settings.providers.probe_max_age_days)?;
            Some(target)
        }
        None => None,
    };
    let adoption = match binding.role {
        Role::Embedding if !adopted_already(lore, binding).await? => {
            Some(shadow::adoptable(lore, target.as_ref(), binding.index.as_deref(), &binding.model).await?)
        }
        _ => None,
    };
    Ok(Bindable { role: binding.role, target, adoption })
}

/// Whether an embedding binding's shadow index is the active one and its
/// model the bound one (a version restored after another one that changed
/// neither): there is nothing to adopt, and no reindex to queue.
async fn adopted_already(lore: &Lore, binding: &Rebinding) -> Result<bool> {
    let bound = providers::bound_target_id(lore, Role::Embedding).await?;
    let active_table = shadow::active_table(&lore.db).await?;
    Ok(bound == binding.target_id && binding.index.as_deref() == Some(active_table.as_str()))
}

/// What binding a model came to.
#[derive(Clone, Debug)]
pub enum Rebound {
    /// The role is bound as asked; `version` is the candidate that passed
    /// the eval gate and now serves (`None`: the gate did not apply).
    Bound { version: Option<Version> },
    /// The eval gate kept the candidate inactive: the role is unchanged
    /// until the candidate is activated anyway (see [`restore`]).
    Held { version: Version },
}

/// Binds `role` to target `target_id`, or unbinds it (`None`). With golden
/// questions and a profile, binding a generation or escalation model, and
/// binding or unbinding the embedding model, is a candidate version judged
/// by the save gate with that model in the role: made only if it passes
/// (or when the candidate is activated anyway). An embedding model
/// (a target's, or the on-node one when unbinding) is judged on a shadow
/// index (see [`shadow`]) built first, and only when there is an indexed
/// corpus to judge it on. The rerank role, unbinding the others, and every
/// role before there are golden questions, change at once as
/// `providers::bind` and `providers::unbind` do.
pub async fn bind_model(lore: &Lore, actor: &Actor, role: Role, target_id: Option<&str>) -> Result<Rebound> {
    let gated = match (role, target_id) {
        (Role::Generation | Role::Escalation, Some(_)) => true,
        (Role::Embedding, _) => shadow::corpus_indexed(lore).await?,
        _ => false,
    } && providers::bound_target_id(lore, role).await?.as_deref() != target_id
        && lore.save_gate.applies(lore).await?;
    let serving = if gated { active(lore).await? } else { None };
    let Some(serving) = serving else {
        match target_id {
            Some(id) => {
                providers::bind(lore, actor, role, id).await?;
            }
            None => providers::unbind(lore, actor, role).await?,
        }
        return Ok(Rebound::Bound { version: None });
    };
    let target = match target_id {
        Some(id) => {
            let target = providers::target(lore, id).await?;
            // Refused before anything is stored, as an ungated binding would be.
            providers::check_bindable(role, &target, lore.settings.providers.probe_max_age_days)?;
            Some(target)
        }
        None => None,
    };
    let note = match &target {
        Some(target) => format!("Binds the {} role to {}", role.key(), target.model),
        None => format!(
            "Returns the {} role to the on-node model ({})",
            role.key(),
            lore.settings.models.embedding
        ),
    };
    let first = if role == Role::Embedding { Step::Shadow } else { Step::Candidate };
    let (lore, actor) = (lore.clone(), actor.clone());
    let version = to_the_end(async move {
        let progress = judging::Tracker::start(&lore.db, &note, &actor.label(), first).await?;
        let version = judge_binding(&lore, &actor, serving, role, target.as_ref(), note, &progress).await;
        progress.finish().await;
        version
    })
    .await?;
    Ok(if version.active { Rebound::Bound { version: Some(version) } } else { Rebound::Held { version } })
}

/// Runs a judging to its end even when its caller stops waiting (a client
/// that went away, a proxy's timeout): its verdict lands in the candidate
/// version all the same, and its progress record shows it meanwhile,
/// instead of leaving a candidate held as "not finished" for good.
async fn to_the_end<T: Send + 'static>(
    judging: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    tokio::spawn(judging)
        .await
        .map_err(|err| Error::Internal(format!("a judging stopped abnormally: {err}")))?
}

/// A gated binding of `role` to `target` (`None`: unbinding it) as a
/// candidate version based on `serving`: the shadow index first for an
/// embedding model, then the gate.
async fn judge_binding(
    lore: &Lore,
    actor: &Actor,
    serving: Version,
    role: Role,
    target: Option<&Target>,
    note: String,
    progress: &judging::Tracker,
) -> Result<Version> {
    let index = match role {
        Role::Embedding => {
            let bound = match target {
                Some(target) => Some(providers::resolve_target(lore, &target.id).await?),
                None => None,
            };
            let report = |done, total| progress.report(Step::Shadow, done, total);
            Some(shadow::build(lore, bound.as_ref(), &report).await?.table.clone())
        }
        _ => None,
    };
    let base_row = profile_version::Entity::find_by_id(serving.id.clone())
        .one(&lore.db)
        .await?
        .ok_or(ProfileError::UnknownVersion(serving.version))?;
    let expected = expected_active_id(lore, &base_row).await?;
    let binding = Rebinding {
        role,
        target_id: target.map(|t| t.id.clone()),
        model: target.map_or_else(|| lore.settings.models.embedding.clone(), |t| t.model.clone()),
        index,
    };
    let candidate = Candidate { snapshot: serving.snapshot, note: Some(note), binding: Some(binding) };
    save_gated(lore, actor, serving.version, expected, candidate, progress).await
}

/// The quick add (account, generation target, probe) whose generation
/// binding goes through [`bind_model`]: judged when golden questions exist.
pub async fn quick_add(lore: &Lore, actor: &Actor, add: QuickAdd) -> Result<(Account, Target, Rebound)> {
    let gated = lore.save_gate.applies(lore).await? && active(lore).await?.is_some();
    if !gated {
        let (account, target) = providers::add_generation_target(lore, actor, add, true).await?;
        return Ok((account, target, Rebound::Bound { version: None }));
    }
    let (account, target) = providers::add_generation_target(lore, actor, add, false).await?;
    let rebound = bind_model(lore, actor, Role::Generation, Some(&target.id)).await?;
    Ok((account, target, rebound))
}

/// The cluster setting that holds the wizard's persona choice until the
/// profile exists.
const CHOSEN_PERSONA: &str = "setup.persona";

/// The persona the first index builds the profile from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PersonaChoice {
    pub persona: String,
    #[serde(default)]
    pub details: Details,
}

/// The persona a new deployment answers as when the admin chose none.
pub const DEFAULT_PERSONA: &str = "documentation_assistant";

/// Records the wizard's persona step. Once the profile exists, the persona is
/// changed in the prompt editor instead (a new version).
pub async fn choose_persona(lore: &Lore, actor: &Actor, choice: PersonaChoice) -> Result<()> {
    persona(&choice.persona)?;
    let value = serde_json::to_value(&choice).map_err(|err| Error::Internal(err.to_string()))?;
    let txn = crate::store::begin_write(&lore.db).await?;
    crate::store::put_setting(&txn, CHOSEN_PERSONA, value.clone(), &actor.label()).await?;
    audit::record(&txn, actor, "profile.persona_chosen", None, value).await?;
    txn.commit().await?;
    Ok(())
}

/// Whether the admin chose a persona (the wizard's first step).
pub async fn persona_chosen(lore: &Lore) -> Result<bool> {
    Ok(crate::store::setting(&lore.db, CHOSEN_PERSONA).await?.is_some())
}

/// The wizard's choice, or the default persona.
pub async fn chosen_persona(lore: &Lore) -> Result<PersonaChoice> {
    let stored = crate::store::setting(&lore.db, CHOSEN_PERSONA).await?;
    Ok(stored
        .and_then(|value| serde_json::from_value::<PersonaChoice>(value).ok())
        .filter(|choice| persona(&choice.persona).is_ok())
        .unwrap_or_else(|| PersonaChoice {
            persona: DEFAULT_PERSONA.to_owned(),
            details: Details::default(),
        }))
}

/// Called when an index starts: builds the profile from the chosen persona
/// the first time, and does nothing after that.
pub async fn ensure_on_first_index(lore: &Lore, actor: &Actor) -> Result<Version> {
    if let Some(active) = active(lore).await? {
        return Ok(active);
    }
    let choice = chosen_persona(lore).await?;
    ensure(lore, actor, &choice.persona, choice.details).await
}

#[cfg(test)]
mod tests {
    use super::*;

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

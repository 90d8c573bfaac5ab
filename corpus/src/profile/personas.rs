//! Personas: each kind of deployment's default prompt and behaviour, the
//! prompt rendered from a persona and its details, and the wizard's choice.

use super::*;

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

pub(super) fn non_empty(value: &Option<String>) -> Option<&str> {
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
            composition: Composition::Auto,
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

/// The cluster setting that holds the wizard's persona choice until the
/// profile exists.
pub(super) const CHOSEN_PERSONA: &str = "setup.persona";

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
pub async fn choose_persona(lore: &Corpus, actor: &Actor, choice: PersonaChoice) -> Result<()> {
    persona(&choice.persona)?;
    let value = serde_json::to_value(&choice).map_err(|err| Error::Internal(err.to_string()))?;
    let txn = crate::store::begin_write(&lore.db).await?;
    crate::store::put_setting(&txn, CHOSEN_PERSONA, value.clone(), &actor.label()).await?;
    audit::record(&txn, actor, "profile.persona_chosen", None, value).await?;
    txn.commit().await?;
    Ok(())
}

/// Whether the admin chose a persona (the wizard's first step).
pub async fn persona_chosen(lore: &Corpus) -> Result<bool> {
    Ok(crate::store::setting(&lore.db, CHOSEN_PERSONA).await?.is_some())
}

/// The wizard's choice, or the default persona.
pub async fn chosen_persona(lore: &Corpus) -> Result<PersonaChoice> {
    let stored = crate::store::setting(&lore.db, CHOSEN_PERSONA).await?;
    Ok(stored
        .and_then(|value| serde_json::from_value::<PersonaChoice>(value).ok())
        .filter(|choice| persona(&choice.persona).is_ok())
        .unwrap_or_else(|| PersonaChoice {
            persona: DEFAULT_PERSONA.to_owned(),
            details: Details::default(),
        }))
}

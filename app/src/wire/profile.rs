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
            })
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

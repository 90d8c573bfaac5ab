//! The setup wizard and the console's frame: readiness, the viewer, how to
//! sign in, the wizard's state and its first question.

use serde::{Deserialize, Serialize};

use super::sources::{JobView, SourceView};

/// `GET /admin/setup-state/`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetupState {
    /// One entry per concern, in display order: configuration, embedding,
    /// provider, indexing, content, profile_version.
    pub checks: Vec<ReadinessCheck>,
    /// The server's verdict (SPEC.md's `canAnswer`); the answer runtime
    /// enforces exactly this.
    #[serde(rename = "canAnswer")]
    pub can_answer: bool,
    /// The same verdict under its old name, `can_answer`, sent for one more
    /// release so that existing scripts keep working. Deprecated: read
    /// `canAnswer`.
    #[serde(rename = "can_answer", default, skip_deserializing)]
    pub can_answer_deprecated: bool,
    /// Why not (empty when `canAnswer`).
    pub reasons: Vec<String>,
    pub active_profile_version: Option<i64>,
    /// The active version's last eval over the golden questions, if it had one.
    #[serde(default)]
    pub active_evals: Option<EvalScoreView>,
    /// The setup wizard was walked to its end (until then the console sends
    /// missing checks to the wizard's steps).
    #[serde(default)]
    pub wizard_complete: bool,
}

/// Right answers out of golden questions at a version's last eval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalScoreView {
    pub correct: u64,
    pub questions: u64,
    pub ran_at: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadinessCheck {
    pub name: String,
    /// `ok`, `pending`, `missing` or `failing`.
    pub status: String,
    pub detail: String,
}

/// Who is signed in, as the console needs to know it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewerInfo {
    pub display_name: String,
    pub email: Option<String>,
    pub is_admin: bool,
}

/// How an admin can sign in to this install.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignInOptions {
    /// An identity provider is configured (otherwise: the bootstrap link).
    pub oidc: bool,
}

/// `GET /admin/setup/`: where the setup wizard is and what its steps made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetupWizardView {
    /// `persona`, `source`, `provider`, `advanced`, `index`, `question` or `complete`.
    pub step: String,
    /// Every step, in order.
    pub steps: Vec<String>,
    /// The chosen persona's key, once chosen.
    pub persona: Option<String>,
    pub source: Option<SourceView>,
    /// The model that answers, once the provider step bound one.
    pub generation_model: Option<String>,
    /// The first index run, with its live progress.
    pub job: Option<JobView>,
    /// The first question got an answer.
    pub answered: bool,
    /// A question went through the pipeline, answered or refused: the
    /// wizard may finish.
    #[serde(default)]
    pub asked: bool,
}

/// `POST /admin/setup/ask`: the wizard's first question.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AskRequest {
    pub question: String,
}

#[cfg(feature = "ssr")]
mod from_engine {
    use super::*;
    use engine::readiness;

    impl From<engine::wizard::Overview> for SetupWizardView {
        fn from(overview: engine::wizard::Overview) -> Self {
            Self {
                step: overview.progress.step.key().to_owned(),
                steps: engine::wizard::Step::ALL.iter().map(|s| s.key().to_owned()).collect(),
                persona: overview.persona,
                source: overview.source.map(SourceView::from),
                generation_model: overview.generation_model,
                job: overview.job.map(JobView::from),
                answered: overview.progress.answered,
                asked: overview.progress.asked,
            }
        }
    }

    impl From<readiness::SetupState> for SetupState {
        fn from(state: readiness::SetupState) -> Self {
            Self {
                checks: state
                    .checks
                    .into_iter()
                    .map(|check| ReadinessCheck {
                        name: check.concern.key().to_owned(),
                        status: check.status.key().to_owned(),
                        detail: check.detail,
                    })
                    .collect(),
                can_answer: state.can_answer,
                can_answer_deprecated: state.can_answer,
                reasons: state.reasons,
                active_profile_version: state.active_profile_version,
                active_evals: state.active_evals.map(|e| EvalScoreView {
                    correct: e.correct as u64,
                    questions: e.questions as u64,
                    ran_at: crate::wire::time(e.ran_at),
                }),
                wizard_complete: state.wizard_complete,
            }
        }
    }

    impl From<&engine::auth::Viewer> for ViewerInfo {
        fn from(viewer: &engine::auth::Viewer) -> Self {
            Self {
                display_name: viewer
                    .display_name
                    .clone()
                    .or_else(|| viewer.email.clone())
                    .unwrap_or_else(|| "Admin".to_owned()),
                email: viewer.email.clone(),
                is_admin: viewer.is_admin,
            }
        }
    }
}

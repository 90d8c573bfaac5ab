//! The source connector: everything Lore knows about one kind of source.
//!
//! A kind (upload, website, table, …) is a type implementing [`Connector`]:
//! its configuration as a typed value, how an admin's configuration is
//! checked (its shape, then against what exists), the sync of one indexing
//! run, and [`KindInfo`], the facts every surface shows: its label, when its
//! first sync starts, whether it re-syncs on a schedule, whether it takes
//! files, and the fields of its form (the console's Sources screen and the
//! setup wizard draw one form from them). Kinds are registered in one place,
//! [`super::kinds::KINDS`]; nothing else in Lore names a kind.
//!
//! The rest of the engine holds a kind as a [`SourceKind`] (a handle on its
//! registered connector) and a configuration as a [`SourceConfig`] (the
//! typed value behind its JSON), and reaches the connector through
//! [`AnyConnector`], the object-safe face every `Connector` has.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::audience::MirroredTable;
use super::{Source, Volatility};
use crate::ingest::jobs::ProgressHandle;
use crate::ingest::{Indexer, IngestError};
use crate::{Corpus, Error, Result};

/// One kind of source. See the module documentation, and
/// `docs/source-kinds.md` for a worked example of adding one.
#[async_trait]
pub trait Connector: Send + Sync + 'static {
    /// The configuration as stored (as JSON) and as the sync reads it.
    type Config: Serialize + DeserializeOwned + Clone + fmt::Debug + PartialEq + Send + Sync + 'static;

    /// What every surface shows of the kind.
    fn info(&self) -> &'static KindInfo;

    /// Checks the shape of the configuration an admin gives (`None`: none
    /// given): fields, URLs, patterns, limits. No I/O. (A stored
    /// configuration is read back as `Config` without it: a sync checks
    /// again what it must.)
    fn parse(&self, given: Option<Value>) -> Result<Self::Config, IngestError> {
        config_from(Connector::info(self), given)
    }

    /// Checks a parsed configuration against what exists (an address the
    /// crawler may reach, a table in the catalog) before the source is
    /// stored. Nothing is stored when it fails.
    async fn check(&self, _lore: &Corpus, _config: &Self::Config) -> Result<()> {
        Ok(())
    }

    /// The sync of one indexing run: read what the source holds now, index
    /// what changed through `run.indexer`, remove what is gone, and count
    /// on `run.progress`. An error fails the source's sync as a whole (its
    /// earlier content is kept); a document that cannot be read is counted
    /// as failed on the progress instead.
    async fn sync(&self, run: Run<'_>, config: &Self::Config) -> Result<()>;

    /// The application-database table whose content a source of this kind
    /// copies, with the attributes it reads: its default audience is that
    /// table's readers ([`super::audience::Audience::Table`]). `None` (the
    /// default) for content with no permissions of its own.
    fn mirrored_table(&self, _config: &Self::Config) -> Option<MirroredTable> {
        None
    }

    /// One line on where the last completed sync left off, from the state
    /// it recorded (`source.sync_state`): what the Sources screen shows
    /// under the source. `None` (the default) for kinds that keep none.
    fn state_summary(&self, _state: &Value) -> Option<String> {
        None
    }

    /// Whether a forge's webhook call proves the secret of a source of this
    /// kind configured so: such a call queues a sync without a session.
    /// `false` (the default) for kinds no forge calls.
    fn verifies_webhook(&self, _config: &Self::Config, _proof: &WebhookProof<'_>) -> bool {
        false
    }
}

/// What a forge's webhook call carries to prove it knows a source's secret.
#[derive(Clone, Copy, Debug)]
pub enum WebhookProof<'a> {
    /// The body signed with the secret, HMAC-SHA256 in hex (GitHub's
    /// `X-Hub-Signature-256: sha256=…`, which Gitea and Forgejo send too).
    Signature { hex: &'a str, body: &'a [u8] },
    /// The secret itself (GitLab's `X-Gitlab-Token`).
    Token(&'a str),
}

/// What one sync gets: the run's indexer (models, store, chunking), the
/// source as it was read when the run began, the run's progress counters
/// and its cancellation flag.
pub struct Run<'a> {
    pub indexer: &'a Indexer,
    pub source: &'a Source,
    pub progress: &'a ProgressHandle,
    pub cancel: tokio::sync::watch::Receiver<bool>,
}

/// When a new source of a kind has its first sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirstSync {
    /// Queued as soon as the source is created (a website, a table).
    AtOnce,
    /// When content arrives: each upload queues a run.
    OnContent,
}

/// The facts about a kind that the surfaces show and the lifecycle follows.
#[derive(Debug)]
pub struct KindInfo {
    /// The stored and wire name (`website`).
    pub key: &'static str,
    /// What the console's kind choice says.
    pub label: &'static str,
    /// `false`: announced, not yet available (shown, not selectable).
    pub available: bool,
    pub first_sync: FirstSync,
    /// Whether the scheduler re-syncs it at its volatility's pace.
    pub resyncs: bool,
    /// A new source's volatility when none is given.
    pub default_volatility: Volatility,
    /// Whether files are uploaded into it.
    pub takes_files: bool,
    /// What a configuration needs, for the error when none is given.
    pub needs: &'static str,
    /// A note the form shows above the kind's fields.
    pub note: Option<&'static str>,
    /// The form's words for the re-sync choice and its "never" option.
    pub resync_label: &'static str,
    pub never_label: &'static str,
    /// The configuration's fields as the form asks for them. Keys the form
    /// leaves out (a table's conditions) are still accepted by `parse`.
    pub fields: &'static [Field],
}

impl KindInfo {
    /// A kind with nothing to configure and no schedule, synced when
    /// content arrives; the constructors below set the rest.
    pub const fn new(key: &'static str, label: &'static str) -> Self {
        Self {
            key,
            label,
            available: true,
            first_sync: FirstSync::OnContent,
            resyncs: false,
            default_volatility: Volatility::Static,
            takes_files: false,
            needs: "",
            note: None,
            resync_label: "Re-sync",
            never_label: "Never on its own",
            fields: &[],
        }
    }

    /// Synced at once when created, then on a schedule (default daily).
    pub const fn synced(self) -> Self {
        Self { first_sync: FirstSync::AtOnce, resyncs: true, default_volatility: Volatility::Medium, ..self }
    }
}

/// One field of a kind's form: the configuration key it fills, and how.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    pub key: &'static str,
    pub label: &'static str,
    pub input: Input,
    pub required: bool,
    /// The value the form starts with (empty: none).
    pub default: &'static str,
    pub placeholder: &'static str,
    /// Shown under "More options" rather than at once.
    pub advanced: bool,
}

/// How a field is entered, and so which JSON value it gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// A string.
    Text,
    /// A string that is a URL.
    Url,
    /// A whole number, at least `min`.
    Number { min: u32 },
    /// A list of strings, entered separated by commas.
    List,
    /// One of these values (value, label); the first is the default.
    Choice(&'static [(&'static str, &'static str)]),
}

impl Field {
    const fn of(key: &'static str, label: &'static str, input: Input) -> Self {
        Self { key, label, input, required: false, default: "", placeholder: "", advanced: false }
    }

    pub const fn text(key: &'static str, label: &'static str) -> Self {
        Self::of(key, label, Input::Text)
    }

    pub const fn url(key: &'static str, label: &'static str) -> Self {
        Self::of(key, label, Input::Url)
    }

    pub const fn number(key: &'static str, label: &'static str, min: u32) -> Self {
        Self::of(key, label, Input::Number { min })
    }

    pub const fn list(key: &'static str, label: &'static str) -> Self {
        Self::of(key, label, Input::List)
    }

    pub const fn choice(
        key: &'static str,
        label: &'static str,
        of: &'static [(&'static str, &'static str)],
    ) -> Self {
        Self::of(key, label, Input::Choice(of))
    }

    pub const fn required(self) -> Self {
        Self { required: true, ..self }
    }

    pub const fn default(self, default: &'static str) -> Self {
        Self { default, ..self }
    }

    pub const fn placeholder(self, placeholder: &'static str) -> Self {
        Self { placeholder, ..self }
    }

    pub const fn advanced(self) -> Self {
        Self { advanced: true, ..self }
    }
}

/// The usual [`Connector::parse`]: the configuration given, read as the
/// kind's type. A kind whose type has no defaults for everything needs one.
pub fn config_from<C: DeserializeOwned>(info: &KindInfo, given: Option<Value>) -> Result<C, IngestError> {
    let given = given.ok_or_else(|| {
        IngestError::InvalidSource(format!("a {} source needs a configuration with {}", info.key, info.needs))
    })?;
    serde_json::from_value(given)
        .map_err(|err| IngestError::InvalidSource(format!("{} configuration: {err}", info.key)))
}

/// A connector as the engine holds it, whatever its configuration's type:
/// every [`Connector`] is one.
#[async_trait]
pub trait AnyConnector: Send + Sync {
    fn info(&self) -> &'static KindInfo;
    /// [`Connector::parse`], the result kept with its JSON.
    fn parse(&self, given: Option<Value>) -> Result<SourceConfig>;
    /// A stored configuration, read back (the error says why not).
    fn decode(&self, stored: Value) -> Result<SourceConfig, String>;
    /// [`Connector::check`].
    async fn check(&self, lore: &Corpus, config: &SourceConfig) -> Result<()>;
    /// [`Connector::sync`] with the source's own configuration.
    async fn sync(&self, run: Run<'_>) -> Result<()>;
    /// [`Connector::mirrored_table`] (`None` for another kind's configuration).
    fn mirrored_table(&self, config: &SourceConfig) -> Option<MirroredTable>;
    /// [`Connector::state_summary`].
    fn state_summary(&self, state: &Value) -> Option<String>;
    /// [`Connector::verifies_webhook`] (`false` for another kind's configuration).
    fn verifies_webhook(&self, config: &SourceConfig, proof: &WebhookProof<'_>) -> bool;
}

#[async_trait]
impl<C: Connector> AnyConnector for C {
    fn info(&self) -> &'static KindInfo {
        Connector::info(self)
    }

    fn parse(&self, given: Option<Value>) -> Result<SourceConfig> {
        let typed = Connector::parse(self, given)?;
        let json = serde_json::to_value(&typed).map_err(|err| Error::Internal(err.to_string()))?;
        Ok(SourceConfig { typed: Arc::new(typed), json })
    }

    fn decode(&self, stored: Value) -> Result<SourceConfig, String> {
        let typed: C::Config = serde_json::from_value(stored).map_err(|err| err.to_string())?;
        let json = serde_json::to_value(&typed).map_err(|err| err.to_string())?;
        Ok(SourceConfig { typed: Arc::new(typed), json })
    }

    async fn check(&self, lore: &Corpus, config: &SourceConfig) -> Result<()> {
        Connector::check(self, lore, typed::<C>(config)?).await
    }

    async fn sync(&self, run: Run<'_>) -> Result<()> {
        let config = typed::<C>(&run.source.config)?.clone();
        Connector::sync(self, run, &config).await
    }

    fn mirrored_table(&self, config: &SourceConfig) -> Option<MirroredTable> {
        Connector::mirrored_table(self, config.get::<C::Config>()?)
    }

    fn state_summary(&self, state: &Value) -> Option<String> {
        Connector::state_summary(self, state)
    }

    fn verifies_webhook(&self, config: &SourceConfig, proof: &WebhookProof<'_>) -> bool {
        config.get::<C::Config>().is_some_and(|config| Connector::verifies_webhook(self, config, proof))
    }
}

fn typed<C: Connector>(config: &SourceConfig) -> Result<&C::Config> {
    config.get::<C::Config>().ok_or_else(|| {
        Error::Internal(format!(
            "a configuration that is not a {} source's was given to one",
            std::any::type_name::<C>()
        ))
    })
}

/// A kind of source: a handle on its registered connector. Two handles are
/// equal when they name the same kind.
#[derive(Clone, Copy)]
pub struct SourceKind(&'static dyn AnyConnector);

impl SourceKind {
    /// The registered kind called `raw`.
    pub fn parse(raw: &str) -> Result<Self, IngestError> {
        Self::all().find(|kind| kind.key() == raw).ok_or_else(|| {
            let offered: Vec<&str> = Self::all().filter(|k| k.info().available).map(Self::key).collect();
            IngestError::InvalidSource(format!("unknown source kind {raw:?}; use {}", offered.join(", ")))
        })
    }

    /// Every registered kind, in the order the console offers them.
    pub fn all() -> impl Iterator<Item = SourceKind> {
        super::kinds::KINDS.iter().map(|connector| SourceKind(*connector))
    }

    pub fn key(self) -> &'static str {
        self.0.info().key
    }

    pub fn info(self) -> &'static KindInfo {
        self.0.info()
    }

    pub fn connector(self) -> &'static dyn AnyConnector {
        self.0
    }
}

impl PartialEq for SourceKind {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for SourceKind {}

impl fmt::Debug for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// A source's configuration: the connector's typed value, with the JSON it
/// is stored as and the wire shows.
#[derive(Clone)]
pub struct SourceConfig {
    typed: Arc<dyn Any + Send + Sync>,
    json: Value,
}

impl SourceConfig {
    /// The typed configuration, when it is a `T` (a kind's own code asks
    /// for its own type: `source.config.get::<WebsiteConfig>()`).
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.typed.downcast_ref::<T>()
    }

    /// As stored and as the wire shows it.
    pub fn to_json(&self) -> Value {
        self.json.clone()
    }
}

impl PartialEq for SourceConfig {
    fn eq(&self, other: &Self) -> bool {
        self.json == other.json
    }
}

impl fmt::Debug for SourceConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.json)
    }
}

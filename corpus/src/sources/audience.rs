//! Who may read a source's content through answers and retrieval, and what
//! one caller may read: the visible scope every search is limited to.
//!
//! A source's [`Audience`] is `everyone` (uploads' and websites' default,
//! SPEC.md's single knowledge base), a set of roles, or `table`: the readers
//! of the application-database table the source mirrors (a table source's
//! default). A caller is a [`Reader`], resolved once per request by the
//! surface's engine call from who is asking; [`visible_scope`] turns the
//! two into the [`Scope`] the vector and full-text stages filter on, so a
//! caller's top k is taken from what it may read and nothing else.
//!
//! A table source with the `table` audience is read through [`View`]s: a
//! role that may read the table but not every attribute the source reads
//! gets the documents built from the attributes it may read, indexed apart
//! under a scope id of their own ([`crate::index::scope_id`]), so the
//! search's prefilter keeps one view's chunks from another's readers. A
//! role reads none of the source when it may read no attribute the text is
//! built from. Building the views is the table sync's
//! ([`crate::ingest::table`]); a change of a role's permission, or of the
//! source's audience, queues the sync that builds the views it now needs
//! ([`requeue_views`]).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Source;
use crate::appdb::permission::{Access, Permission};
use crate::appdb::users::{Principal, Role};
use crate::index::Scope;
use crate::{Corpus, Error, Result};

/// Who may read a source through answers and retrieval. Admins (super
/// users) always may.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Audience {
    /// Every caller, the widget's visitors and keys without a user included.
    Everyone,
    /// Users whose role is one of these.
    Roles(Vec<String>),
    /// The users whose role may read the table the source mirrors.
    Table,
}

impl Audience {
    /// Reads what an admin typed: `everyone`, `table`, or role names
    /// separated by commas. Whether the roles exist is [`check`]'s to say.
    pub fn parse(raw: &str) -> Result<Self> {
        match raw.trim() {
            "everyone" => Ok(Audience::Everyone),
            "table" => Ok(Audience::Table),
            listed => Self::roles(listed.split(',')),
        }
    }

    /// The audience of these roles (at least one).
    pub fn roles<'a>(names: impl Iterator<Item = &'a str>) -> Result<Self> {
        let mut roles: Vec<String> =
            names.map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned).collect();
        roles.sort();
        roles.dedup();
        if roles.is_empty() {
            return Err(Error::InvalidInput(
                "an audience is `everyone`, `table`, or one or more role names separated by commas".into(),
            ));
        }
        Ok(Audience::Roles(roles))
    }

    /// The audience a source of `source`'s kind has when none is set.
    pub fn default_for(mirrors_table: bool) -> Self {
        if mirrors_table {
            Audience::Table
        } else {
            Audience::Everyone
        }
    }
}

impl fmt::Display for Audience {
    /// The form [`Audience::parse`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Audience::Everyone => f.write_str("everyone"),
            Audience::Table => f.write_str("table"),
            Audience::Roles(roles) => f.write_str(&roles.join(",")),
        }
    }
}

/// Stored as `"everyone"`, `"table"` or an array of role names.
impl Serialize for Audience {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Audience::Roles(roles) => roles.serialize(serializer),
            other => serializer.serialize_str(&other.to_string()),
        }
    }
}

/// Reads the stored form, and what the operations API takes: a string as
/// [`Audience::parse`] reads it, or an array of role names.
impl<'de> Deserialize<'de> for Audience {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Given {
            Text(String),
            Roles(Vec<String>),
        }
        let read = match Given::deserialize(deserializer)? {
            Given::Text(text) => Audience::parse(&text),
            Given::Roles(roles) => Audience::roles(roles.iter().map(String::as_str)),
        };
        read.map_err(serde::de::Error::custom)
    }
}

/// Refuses an audience that cannot apply to `source`: a role that does not
/// exist (named in the error), or `table` for a source that mirrors none.
pub async fn check(lore: &Corpus, audience: &Audience, mirrors_table: bool) -> Result<()> {
    match audience {
        Audience::Everyone => Ok(()),
        Audience::Table if mirrors_table => Ok(()),
        Audience::Table => Err(Error::InvalidInput(
            "only a table source can have the audience `table` (its table's readers)".into(),
        )),
        Audience::Roles(named) => {
            let roles = crate::appdb::users::roles(lore).await?;
            let unknown: Vec<&str> = named
                .iter()
                .filter(|name| !roles.iter().any(|role| &role.name == *name))
                .map(String::as_str)
                .collect();
            if unknown.is_empty() {
                Ok(())
            } else {
                Err(Error::InvalidInput(format!(
                    "the audience names no role called {}",
                    unknown.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                )))
            }
        }
    }
}

/// The application-database table a source's content mirrors, with the
/// attributes its documents are built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirroredTable {
    pub database: String,
    pub table: String,
    /// Every attribute a document is built from (title, text, citation
    /// URL), sorted.
    pub attributes: Vec<String>,
    /// Those its text is built from: a view without any has nothing to say.
    pub text: Vec<String>,
}

/// What one reader reads of a table source: the attributes of the source's
/// documents it may read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    /// Sorted; every attribute of the source for the whole view.
    pub attributes: Vec<String>,
    /// Whether these are all the source's attributes: the documents every
    /// admin reads, indexed under the source's own id.
    pub whole: bool,
}

impl View {
    /// The whole source.
    pub fn whole(mirrored: &MirroredTable) -> Self {
        View { attributes: mirrored.attributes.clone(), whole: true }
    }

    /// What `permission` reads of `mirrored`: none when it may not read the
    /// table, or no attribute the text is built from.
    pub fn of(permission: &Permission, mirrored: &MirroredTable) -> Option<Self> {
        let (database, table) = (&mirrored.database, &mirrored.table);
        if !permission.may(database, table, Access::Read) {
            return None;
        }
        let attributes: Vec<String> = mirrored
            .attributes
            .iter()
            .filter(|a| permission.may_attribute(database, table, a, Access::Read))
            .cloned()
            .collect();
        if attributes.len() == mirrored.attributes.len() {
            return Some(View::whole(mirrored));
        }
        attributes.iter().any(|a| mirrored.text.contains(a)).then_some(View { attributes, whole: false })
    }

    /// Its id within the source: none for the whole view, otherwise a short
    /// digest of its attributes (the same on every node and every run).
    pub fn id(&self) -> Option<String> {
        (!self.whole).then(|| {
            let digest = crate::auth::sha256_hex(&self.attributes.join("\n"));
            format!("view-{}", &digest[..12])
        })
    }

    /// Whether a document of this view holds `attribute`'s value.
    pub fn holds(&self, attribute: &str) -> bool {
        self.whole || self.attributes.iter().any(|a| a == attribute)
    }
}

/// Who is asking, as far as reading goes: decided once per request, from
/// the key, the session or the signed-in admin, by the engine function the
/// surface calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reader {
    /// Reads every source: signed-in admins, `lore` at the terminal, and
    /// users whose role is a super user.
    Everything,
    /// A user of the application database, through its role.
    Role { name: String, permission: Permission },
    /// Nobody in particular: the widget's visitors, keys without a user,
    /// users that are gone or inactive. Reads `everyone` sources only.
    Public,
}

impl Reader {
    /// What `principal` reads.
    pub fn of(principal: &Principal) -> Self {
        match principal {
            Principal::Admin { .. } => Reader::Everything,
            Principal::User(user) if !user.active => Reader::Public,
            Principal::User(user) => Reader::of_role(&user.role),
        }
    }

    /// What a user of `role` reads.
    pub fn of_role(role: &Role) -> Self {
        if role.permission.super_user {
            Reader::Everything
        } else {
            Reader::Role { name: role.name.clone(), permission: role.permission.clone() }
        }
    }

    /// The audience this reader belongs to, in the words "answer as"
    /// takes: `admin`, `everyone` or `role:NAME`. Runs are counted under
    /// it on the Dashboard.
    pub fn audience(&self) -> String {
        match self {
            Reader::Everything => "admin".to_owned(),
            Reader::Role { name, .. } => format!("role:{name}"),
            Reader::Public => "everyone".to_owned(),
        }
    }

    /// The scope id of what this reader reads of `source`
    /// ([`crate::index::scope_id`]): the source's own for the whole of it,
    /// a view's for some of a table's attributes, none when it reads
    /// nothing.
    pub fn reach(&self, source: &Source) -> Option<String> {
        match (self, &source.audience) {
            (Reader::Role { permission, .. }, Audience::Table) => {
                let view = View::of(permission, &source.mirrored_table()?)?;
                Some(crate::index::scope_id(&source.id, view.id().as_deref()))
            }
            (_, audience) => self.admits(audience).then(|| source.id.clone()),
        }
    }

    /// Whether `audience` takes this reader in (`table`: only a reader of
    /// everything, without the table it would name).
    pub fn admits(&self, audience: &Audience) -> bool {
        match (self, audience) {
            (Reader::Everything, _) | (_, Audience::Everyone) => true,
            (Reader::Role { name, .. }, Audience::Roles(roles)) => roles.iter().any(|role| role == name),
            (Reader::Public, _) | (Reader::Role { .. }, Audience::Table) => false,
        }
    }
}

/// What of `sources` a search for `reader` reaches: the enabled ones it may
/// read, each whole or as its view. `every_source` only when that is every
/// chunk there is (the store then searches without a filter): never while
/// a table source exists, whose views' chunks are not the whole source's.
pub fn visible_scope(sources: &[Source], reader: &Reader) -> Scope {
    let visible: Vec<String> = sources.iter().filter(|s| s.enabled).filter_map(|s| reader.reach(s)).collect();
    let views_possible = sources.iter().any(|s| s.mirrored_table().is_some());
    Scope { every_source: visible.len() == sources.len() && !views_possible, sources: visible }
}

/// The views a table source's sync builds: the whole one, and under the
/// `table` audience one for each distinct set of its attributes some
/// role may read (roles that read the whole source, or nothing of it,
/// need none of their own).
pub async fn views(lore: &Corpus, source: &Source) -> Result<Vec<View>> {
    let Some(mirrored) = source.mirrored_table() else { return Ok(Vec::new()) };
    let mut views = vec![View::whole(&mirrored)];
    if source.audience == Audience::Table {
        for role in crate::appdb::users::roles(lore).await? {
            if let Some(view) = View::of(&role.permission, &mirrored) {
                if !views.contains(&view) {
                    views.push(view);
                }
            }
        }
    }
    Ok(views)
}

/// Queues a sync of each enabled table source whose views a role's
/// permission change (`before` → `after`; none for a role added or
/// dropped) alters, so the documents of its new view are built (and those
/// no role reads any more removed). Until the sync has run, the role reads
/// nothing of such a source it did not read before: closed, never open.
/// Called after the change committed, so a sync that cannot be queued is
/// logged, not failed: the source's scheduled re-sync builds the view.
/// Returns how many syncs were queued.
pub async fn requeue_views(lore: &Corpus, before: Option<&Permission>, after: Option<&Permission>) -> usize {
    let sources = match super::list(lore).await {
        Ok(sources) => sources,
        Err(err) => {
            tracing::warn!(error = %err, "a role changed, but the table sources to re-sync could not be listed");
            return 0;
        }
    };
    let mut queued = 0;
    for source in sources {
        let Some(mirrored) = source.mirrored_table() else { continue };
        if !source.enabled || source.audience != Audience::Table {
            continue;
        }
        let view = |permission: Option<&Permission>| permission.and_then(|p| View::of(p, &mirrored));
        if view(before) != view(after) {
            queued += requeue(lore, &source.id).await;
        }
    }
    queued
}

/// Queues a sync of table source `id` for its views; 1 when queued.
pub(crate) async fn requeue(lore: &Corpus, id: &str) -> usize {
    match crate::ingest::jobs::enqueue(lore, Some(id), false, "permissions").await {
        Ok(_) => 1,
        Err(err) => {
            tracing::warn!(source = %id, error = %err, "a table source's views changed, but its sync was not queued");
            0
        }
    }
}

/// Drops a role (no user may have it, as [`crate::appdb::users::drop_role`]
/// requires), refused while a source's audience names it: a role made
/// later under the same name would otherwise read those sources.
pub async fn drop_role(
    lore: &Corpus,
    actor: &crate::audit::Actor,
    id: &str,
) -> Result<crate::appdb::users::Role> {
    let role = crate::appdb::users::role(&lore.db, id).await?;
    let naming = super::naming_role(lore, &role.name).await?;
    if !naming.is_empty() {
        return Err(Error::InvalidInput(format!(
            "role `{}` is in the audience of {}; change their audience first",
            role.name,
            naming.iter().map(|n| format!("“{n}”")).collect::<Vec<_>>().join(", ")
        )));
    }
    crate::appdb::users::drop_role(lore, actor, id).await
}

/// The audiences that name role `from` name `to` instead (the role was
/// renamed). Called after the rename: were the audiences rewritten first
/// and the rename then failed, they would name a role nobody has (closed,
/// never open).
pub async fn follow_rename(lore: &Corpus, actor: &crate::audit::Actor, from: &str, to: &str) -> Result<()> {
    for source in super::list(lore).await? {
        let Audience::Roles(roles) = &source.audience else { continue };
        if roles.iter().any(|r| r == from) {
            let renamed: Vec<&str> = roles.iter().map(|r| if r == from { to } else { r.as_str() }).collect();
            super::set_audience(lore, actor, &source.id, &renamed.join(",")).await?;
        }
    }
    Ok(())
}

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
//! Until chunks record which attributes they hold, a table source with the
//! `table` audience is visible to a role only when the role may read the
//! table and every attribute its text, title and citation are built from:
//! a role that may read some of them reads none of the source (closed, so
//! a hidden attribute never reaches an answer).

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
    pub attributes: Vec<String>,
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

    /// Whether this reader may read `source`'s content.
    pub fn may_read(&self, source: &Source) -> bool {
        match (self, &source.audience) {
            (Reader::Role { permission, .. }, Audience::Table) => {
                source.mirrored_table().is_some_and(|mirrored| may_read_table(permission, &mirrored))
            }
            (_, audience) => self.admits(audience),
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

fn may_read_table(permission: &Permission, mirrored: &MirroredTable) -> bool {
    let (database, table) = (&mirrored.database, &mirrored.table);
    permission.may(database, table, Access::Read)
        && mirrored.attributes.iter().all(|a| permission.may_attribute(database, table, a, Access::Read))
}

/// What of `sources` a search for `reader` reaches: the enabled ones it may
/// read. `every_source` only when that is every source there is (the store
/// then searches without a filter).
pub fn visible_scope(sources: &[Source], reader: &Reader) -> Scope {
    let visible: Vec<String> =
        sources.iter().filter(|s| s.enabled && reader.may_read(s)).map(|s| s.id.clone()).collect();
    Scope { every_source: visible.len() == sources.len(), sources: visible }
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

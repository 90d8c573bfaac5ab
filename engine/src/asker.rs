//! Who asks: every surface that answers or retrieves names its caller as an
//! [`Asker`], and the engine turns it into what the caller may read (a
//! [`Reader`]) once per request, here and nowhere else. Keys act as their
//! user through its role; a widget key, a key without a user, and a user
//! that is gone or inactive read the `everyone` sources only; signed-in
//! admins and `lore` at the terminal read everything.

use crate::appdb::users::Principal;
use crate::keys::{Caller, KeyKind};
use crate::search::{self, Traced};
use crate::sources::Reader;
use crate::{Lore, Result};

/// The caller of an answer or a retrieval, as the surface knows it.
#[derive(Clone, Debug)]
pub enum Asker {
    /// A signed-in admin (the Playground, the wizard), `lore` at the
    /// terminal, an eval run.
    Admin,
    /// An access key (`POST /answer`, `POST /retrieve`, the widget).
    Key(Caller),
    /// A user already resolved for this request (an MCP session, the
    /// operations API).
    Principal(Principal),
    /// What every caller may read (an MCP session without a user; the
    /// Playground answering as the widget's visitors).
    Public,
    /// The Playground answering as a role's users, by the role's name.
    Role(String),
    /// The Playground answering as one user, by name.
    User(String),
}

impl Asker {
    /// The Playground's "answer as": `admin` (or nothing), `everyone`,
    /// `role:NAME` or `user:NAME`. Who that is is checked when the request
    /// reads it (an unknown role or user is refused then).
    pub fn answering_as(given: Option<&str>) -> Result<Self> {
        let given = given.map(str::trim).unwrap_or_default();
        let named = |rest: &str, what: &str| {
            let name = rest.trim();
            if name.is_empty() {
                Err(crate::Error::InvalidInput(format!("answer as {what}: name one")))
            } else {
                Ok(name.to_owned())
            }
        };
        match given {
            "" | "admin" => Ok(Asker::Admin),
            "everyone" => Ok(Asker::Public),
            _ => match given.split_once(':') {
                Some(("role", name)) => Ok(Asker::Role(named(name, "a role")?)),
                Some(("user", name)) => Ok(Asker::User(named(name, "a user")?)),
                _ => Err(crate::Error::InvalidInput(format!(
                    "answer as {given:?}: use `admin`, `everyone`, `role:NAME` or `user:NAME`"
                ))),
            },
        }
    }

    /// What the caller may read, as stored now: a role or user change
    /// counts from the next request, on every replica.
    pub async fn reader(&self, lore: &Lore) -> Result<Reader> {
        match self {
            Asker::Admin => Ok(Reader::Everything),
            Asker::Principal(principal) => Ok(Reader::of(principal)),
            Asker::Public => Ok(Reader::Public),
            Asker::Role(name) => Ok(Reader::of_role(&crate::appdb::users::role(&lore.db, name).await?)),
            Asker::User(name) => match crate::appdb::users::user(lore, name).await? {
                Some(user) => Ok(Reader::of(&Principal::User(user))),
                None => Err(crate::appdb::AppDbError::UnknownUser(name.clone()).into()),
            },
            Asker::Key(caller) => {
                let Some(username) = caller.user.as_deref().filter(|_| caller.kind == KeyKind::Secret) else {
                    return Ok(Reader::Public);
                };
                let cache = lore.appdb_cache();
                cache.refresh(&lore.db).await?;
                Ok(match cache.user(&lore.db, username).await? {
                    Some(user) => Reader::of(&Principal::User(user)),
                    None => Reader::Public,
                })
            }
        }
    }
}

/// How "answer as" is stored (a golden question's `asked_as`): `everyone`,
/// `role:NAME` with the role's name even when it was given by id, or
/// `user:NAME`; refused unless the role or user exists now.
pub async fn stored_form(lore: &Lore, given: &str) -> Result<String> {
    let asker = Asker::answering_as(Some(given))?;
    asker.reader(lore).await?;
    Ok(match asker {
        Asker::Role(name) => format!("role:{}", crate::appdb::users::role(&lore.db, &name).await?.name),
        Asker::User(name) => format!("user:{name}"),
        Asker::Public => "everyone".to_owned(),
        Asker::Admin | Asker::Key(_) | Asker::Principal(_) => "admin".to_owned(),
    })
}

/// Adds a role ([`crate::appdb::users::add_role`]); the table sources it
/// reads a view of of its own are synced to build it
/// ([`crate::sources::audience::requeue_views`]).
pub async fn add_role(
    lore: &Lore,
    actor: &crate::audit::Actor,
    name: &str,
    permission: &serde_json::Value,
) -> Result<crate::appdb::users::Role> {
    let added = crate::appdb::users::add_role(lore, actor, name, permission).await?;
    crate::sources::audience::requeue_views(lore, None, Some(&added.permission)).await;
    Ok(added)
}

/// Alters a role ([`crate::appdb::users::alter_role`]); when it is renamed,
/// the audiences and the golden questions that name it follow; when what
/// it reads of a table source changes, the source is synced to build its
/// new view.
pub async fn alter_role(
    lore: &Lore,
    actor: &crate::audit::Actor,
    id: &str,
    name: Option<&str>,
    permission: Option<&serde_json::Value>,
) -> Result<crate::appdb::users::Role> {
    let before = crate::appdb::users::role(&lore.db, id).await?;
    let altered = crate::appdb::users::alter_role(lore, actor, id, name, permission).await?;
    crate::sources::audience::requeue_views(lore, Some(&before.permission), Some(&altered.permission)).await;
    if altered.name != before.name {
        crate::sources::audience::follow_rename(lore, actor, &before.name, &altered.name).await?;
        let (from, to) = (format!("role:{}", before.name), format!("role:{}", altered.name));
        crate::evals::rename_asked_as(lore, &from, &to).await?;
    }
    Ok(altered)
}

/// Drops a role, refused while golden questions are asked as it (their
/// evals could no longer run) or, by
/// [`crate::sources::audience::drop_role`], while an audience names it.
pub async fn drop_role(
    lore: &Lore,
    actor: &crate::audit::Actor,
    id: &str,
) -> Result<crate::appdb::users::Role> {
    let role = crate::appdb::users::role(&lore.db, id).await?;
    refuse_while_asked_as(lore, &format!("role:{}", role.name), &format!("role `{}`", role.name)).await?;
    let dropped = crate::sources::audience::drop_role(lore, actor, id).await?;
    crate::sources::audience::requeue_views(lore, Some(&dropped.permission), None).await;
    Ok(dropped)
}

/// Drops a user, refused while golden questions are asked as the user.
pub async fn drop_user(lore: &Lore, actor: &crate::audit::Actor, username: &str) -> Result<()> {
    refuse_while_asked_as(lore, &format!("user:{username}"), &format!("user `{username}`")).await?;
    crate::appdb::users::drop_user(lore, actor, username).await
}

async fn refuse_while_asked_as(lore: &Lore, asked_as: &str, who: &str) -> Result<()> {
    let asked = crate::evals::asked_as(lore, asked_as).await?;
    match asked.first() {
        None => Ok(()),
        Some(first) => Err(crate::Error::InvalidInput(format!(
            "{who} is who {} golden question(s) are asked as (“{}”{}); change or remove them first",
            asked.len(),
            first.question,
            if asked.len() > 1 { " and more" } else { "" }
        ))),
    }
}

/// Hybrid retrieval with the active version's settings over what `asker`
/// may read, with its trace: `POST /retrieve`, the MCP `retrieve` tool and
/// the `retrieve` operation.
pub async fn retrieve(lore: &Lore, asker: &Asker, query: &str, top_k: Option<usize>) -> Result<Traced> {
    let reader = asker.reader(lore).await?;
    search::traced_retrieval(lore, &reader, query, top_k).await
}

/// The Playground's profile retrieval, as an answer for `asker` would
/// retrieve.
pub async fn profile_retrieval(lore: &Lore, asker: &Asker, query: &str) -> Result<search::ProfileRetrieval> {
    let reader = asker.reader(lore).await?;
    search::profile_retrieval(lore, &reader, query).await
}

/// The corpus diagnostic (`lore search`, the Playground's Corpus mode) over
/// what `asker` may read; `raw` (disabled sources too, no cutoff) reaches
/// disabled sources for a reader of everything only.
pub async fn diagnose(
    lore: &Lore,
    asker: &Asker,
    query: &str,
    top_k: Option<usize>,
    raw: bool,
) -> Result<crate::retrieve::Retrieval> {
    let reader = asker.reader(lore).await?;
    search::diagnose(lore, &reader, query, top_k, raw).await
}

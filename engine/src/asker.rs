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

/// The corpus diagnostic (`lore search`) over what `asker` may read.
pub async fn diagnose(
    lore: &Lore,
    asker: &Asker,
    query: &str,
    top_k: Option<usize>,
) -> Result<crate::retrieve::Retrieval> {
    let reader = asker.reader(lore).await?;
    search::diagnose(lore, &reader, query, top_k, false).await
}

//! The envelope a custom tool's method runs in (SPEC, Application profile
//! rule 4): the caller's user (none for an anonymous session), one database
//! transaction that commits only when the method succeeds, and every record
//! the method reads or writes through it checked by the resource's allow
//! predicates ([`Resource::allow_read`] and its siblings). The tool server
//! appends the call's audit entry, as for any tool call; each write the
//! method makes is audited too, in its transaction.
//!
//! The transaction opens at the method's first record access, so a tool
//! that touches no table (Lore's own `answer`) holds no database lock.

use sea_orm::DatabaseTransaction;

use super::*;
use crate::appdb::permission::Permission;

/// What an allow predicate decides for one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allow {
    /// As the caller's role says: the record is read or written with the
    /// caller's own permission, exactly as the operations API would (table
    /// and attribute permissions, computed attributes' inputs, conditions
    /// only on readable attributes, no new attributes without the
    /// structure permission).
    AsRole,
    /// Yes, the whole record: the resource vouches for this caller.
    Yes,
    /// No: a read leaves the record out, a write is refused.
    No,
}

/// One custom tool call's context and transaction (see the module docs).
pub struct Envelope<'a> {
    lore: &'a Lore,
    caller: &'a Caller,
    resource: &'a dyn Resource,
    txn: Option<DatabaseTransaction>,
    /// Each write, to tell the table's watchers once committed.
    written: Vec<(Table, Vec<Value>)>,
    /// A record operation failed: the call fails, whatever the method
    /// returns (PostgreSQL has aborted the transaction by then).
    failed: bool,
}

impl<'a> Envelope<'a> {
    pub(super) fn new(lore: &'a Lore, caller: &'a Caller, resource: &'a dyn Resource) -> Self {
        Self { lore, caller, resource, txn: None, written: Vec::new(), failed: false }
    }

    /// The engine, for what a tool does beyond records (Lore's own tools
    /// answer questions with it).
    pub fn lore(&self) -> &'a Lore {
        self.lore
    }

    /// Who calls.
    pub fn caller(&self) -> &'a Caller {
        self.caller
    }

    /// The caller's user: `None` for an anonymous session.
    pub fn user(&self) -> Option<&'a Principal> {
        self.caller.principal.as_ref()
    }

    /// The record of `database.table` at `id`, as the caller may read it
    /// (one it may not read is as absent).
    pub async fn get(&mut self, database: &str, table: &str, id: &Value) -> Result<Option<Record>> {
        let result = self.get_inner(database, table, id).await;
        self.noted(result)
    }

    /// The records of `database.table` meeting every condition, as the
    /// caller may read them, by primary key. Under [`Allow::AsRole`] a
    /// record is found as the role would find it: a condition on an
    /// attribute the role may not read finds none of them.
    pub async fn search(
        &mut self,
        database: &str,
        table: &str,
        conditions: Vec<Criterion>,
    ) -> Result<Vec<Record>> {
        let result = self.search_inner(database, table, conditions).await;
        self.noted(result)
    }

    /// Creates `record` in `database.table` if the caller may insert it;
    /// its primary key.
    pub async fn insert(&mut self, database: &str, table: &str, record: Record) -> Result<Value> {
        let result = self.write(database, table, record, WriteMode::Insert).await;
        let result = result.and_then(|done| {
            done.into_iter().next().ok_or_else(|| crate::Error::Internal("an insert wrote nothing".into()))
        });
        self.noted(result)
    }

    /// Changes the attributes `changes` names of the record at its primary
    /// key, if the caller may update it; false when there is none.
    pub async fn update(&mut self, database: &str, table: &str, changes: Record) -> Result<bool> {
        let result =
            self.write(database, table, changes, WriteMode::Update).await.map(|done| !done.is_empty());
        self.noted(result)
    }

    /// Deletes the record at `id`, if the caller may delete it (the
    /// predicate sees the record as stored); false when there is none.
    pub async fn delete(&mut self, database: &str, table: &str, id: &Value) -> Result<bool> {
        let result = self.delete_inner(database, table, id).await;
        self.noted(result)
    }

    fn noted<T>(&mut self, result: Result<T>) -> Result<T> {
        self.failed |= result.is_err();
        result
    }

    async fn txn(&mut self) -> Result<&DatabaseTransaction> {
        if self.txn.is_none() {
            self.txn = Some(crate::store::begin_write(&self.lore.db).await?);
        }
        self.txn.as_ref().ok_or_else(|| crate::Error::Internal("the envelope has no transaction".into()))
    }

    fn permission(&self) -> std::borrow::Cow<'a, Permission> {
        match self.user() {
            Some(principal) => principal.permission(),
            None => std::borrow::Cow::Owned(Permission::default()),
        }
    }

    /// What a record operation runs with: the caller's own permission
    /// under [`Allow::AsRole`] (so `appdb::records` applies every rule it
    /// applies to the operations API), everything under [`Allow::Yes`].
    fn acting(&self, decision: Allow) -> std::borrow::Cow<'a, Permission> {
        match decision {
            Allow::Yes => std::borrow::Cow::Owned(Permission { super_user: true, ..Permission::default() }),
            Allow::AsRole | Allow::No => self.permission(),
        }
    }

    /// The table, in the transaction. Lore's own `system` tables stay a
    /// super user's, whatever a predicate says.
    async fn table(&mut self, database: &str, table: &str) -> Result<Table> {
        if database == crate::appdb::system::DATABASE && !self.permission().super_user {
            return Err(AppDbError::denied("read", format!("{database}.{table}")).into());
        }
        let txn = self.txn().await?;
        catalog::table(txn, database, table).await
    }

    async fn get_inner(&mut self, database: &str, table: &str, id: &Value) -> Result<Option<Record>> {
        let table = self.table(database, table).await?;
        let ids = std::slice::from_ref(id);
        let everything = self.acting(Allow::Yes);
        let txn = self.txn().await?;
        let Some(record) = records::by_ids(txn, &everything, &table, ids, &[]).await?.into_iter().next()
        else {
            return Ok(None);
        };
        match self.resource.allow_read(self.user(), &table, &record) {
            Allow::No => Ok(None),
            Allow::Yes => Ok(Some(record)),
            Allow::AsRole => {
                let permission = self.permission();
                let txn = self.txn().await?;
                Ok(as_role(records::by_ids(txn, &permission, &table, ids, &[]).await)?.into_iter().next())
            }
        }
    }

    async fn search_inner(
        &mut self,
        database: &str,
        table: &str,
        conditions: Vec<Criterion>,
    ) -> Result<Vec<Record>> {
        let table = self.table(database, table).await?;
        let search = Search { conditions, operator: Operator::And, ..Search::default() };
        let everything = self.acting(Allow::Yes);
        let txn = self.txn().await?;
        let found = records::search(txn, &everything, &table, &search).await?;
        let decisions: Vec<Allow> =
            found.iter().map(|record| self.resource.allow_read(self.user(), &table, record)).collect();
        // The role's own search, only if a record is left to it.
        let by_role = if decisions.contains(&Allow::AsRole) {
            let permission = self.permission();
            let txn = self.txn().await?;
            as_role(records::search(txn, &permission, &table, &search).await)?
        } else {
            Vec::new()
        };
        let key = |record: &Record| record.get(&table.primary_key).cloned();
        Ok(found
            .into_iter()
            .zip(decisions)
            .filter_map(|(record, decision)| match decision {
                Allow::No => None,
                Allow::Yes => Some(record),
                Allow::AsRole => by_role.iter().find(|r| key(r) == key(&record)).cloned(),
            })
            .collect())
    }

    async fn write(
        &mut self,
        database: &str,
        table: &str,
        record: Record,
        mode: WriteMode,
    ) -> Result<Vec<Value>> {
        let mut table = self.table(database, table).await?;
        let decision = match mode {
            WriteMode::Insert => self.resource.allow_insert(self.user(), &table, &record),
            WriteMode::Update | WriteMode::Upsert => self.resource.allow_update(self.user(), &table, &record),
        };
        let action = match mode {
            WriteMode::Insert => "insert",
            WriteMode::Update | WriteMode::Upsert => "update",
        };
        if decision == Allow::No {
            return Err(AppDbError::denied(action, table.path()).into());
        }
        let permission = self.acting(decision);
        let txn = self.txn().await?;
        let written = records::write(txn, &permission, &mut table, vec![Value::Object(record)], mode).await?;
        self.audit(&format!("data.{action}"), &table).await?;
        self.written.push((table, written.done.clone()));
        Ok(written.done)
    }

    async fn delete_inner(&mut self, database: &str, table: &str, id: &Value) -> Result<bool> {
        let table = self.table(database, table).await?;
        let everything = self.acting(Allow::Yes);
        let txn = self.txn().await?;
        let found = records::by_ids(txn, &everything, &table, std::slice::from_ref(id), &[]).await?;
        let Some(stored) = found.into_iter().next() else { return Ok(false) };
        let decision = self.resource.allow_delete(self.user(), &table, &stored);
        if decision == Allow::No {
            return Err(AppDbError::denied("delete", table.path()).into());
        }
        let permission = self.acting(decision);
        let txn = self.txn().await?;
        let written = records::delete(txn, &permission, &table, vec![id.clone()]).await?;
        self.audit("data.delete", &table).await?;
        let deleted = !written.done.is_empty();
        self.written.push((table, written.done));
        Ok(deleted)
    }

    async fn audit(&mut self, action: &str, table: &Table) -> Result<()> {
        let actor = match self.user() {
            Some(principal) => principal.actor(),
            None => audit::Actor::System,
        };
        let details = json!({"via": "custom tool", "anonymous": self.user().is_none()});
        let txn = self.txn().await?;
        audit::record(txn, &actor, action, Some(&table.path()), details).await?;
        Ok(())
    }

    /// The method succeeded: commits what it wrote, then tells the tables'
    /// watchers (push channels, table sources). A record operation that
    /// failed fails the call even if the method went on: nothing is kept.
    pub(super) async fn commit(self) -> Result<()> {
        if self.failed {
            return Err(AppDbError::Invalid(
                "the tool went on after one of its record operations failed: nothing it wrote was kept"
                    .into(),
            )
            .into());
        }
        if let Some(txn) = self.txn {
            txn.commit().await?;
        }
        for (table, ids) in &self.written {
            super::written(self.lore, table, ids);
        }
        Ok(())
    }
}

/// A read as the role makes it: a role that may not read the table reads
/// nothing of it (an empty result, not an error the caller could learn
/// from); any other error stands.
fn as_role(result: Result<Vec<Record>>) -> Result<Vec<Record>> {
    match result {
        Err(crate::Error::AppDb(AppDbError::PermissionDenied { .. })) => Ok(Vec::new()),
        other => other,
    }
}

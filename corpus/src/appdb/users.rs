//! Roles and users of the application database, and who a request acts as.
//!
//! A role is a name with a [`Permission`] tree; a user has one role and may
//! be inactive. Users have no passwords: people sign in through the
//! identity provider (a signed-in admin acts as super user), programs use
//! access keys that belong to a user. A request resolves its user afresh,
//! so a change to a role or a user's role counts from the next request;
//! each change is audited and fires [`Event::RoleChanged`].

use chrono::{DateTime, Utc};
use entity::{access_key, app_role, app_user};
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, Set};
use serde_json::{json, Value};

use super::permission::Permission;
use super::{AppDbError, Event};
use crate::audit::{self, Actor};
use crate::{Corpus, Result};

#[derive(Clone, Debug, PartialEq)]
pub struct Role {
    pub id: String,
    pub name: String,
    pub permission: Permission,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Role {
    fn decode(row: app_role::Model) -> Result<Self> {
        let permission = Permission::parse(&row.permission).map_err(|err| {
            crate::Error::Internal(format!(
                "the stored permission of role `{}` cannot be read: {err}",
                row.name
            ))
        })?;
        Ok(Self {
            id: row.id,
            name: row.name,
            permission,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct User {
    pub username: String,
    pub role: Role,
    pub active: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Who a request acts as.
#[derive(Clone, Debug)]
pub enum Principal {
    /// A signed-in admin of the console: a super user.
    Admin { account_id: String },
    /// An application-database user, through one of its keys.
    User(User),
}

impl Principal {
    /// The permission tree every check of this request reads.
    pub fn permission(&self) -> std::borrow::Cow<'_, Permission> {
        match self {
            Principal::Admin { .. } => std::borrow::Cow::Owned(Permission::super_user()),
            Principal::User(user) => std::borrow::Cow::Borrowed(&user.role.permission),
        }
    }

    /// Who the audit log says acted.
    pub fn actor(&self) -> Actor {
        match self {
            Principal::Admin { account_id } => Actor::Account(account_id.clone()),
            Principal::User(user) => Actor::User(user.username.clone()),
        }
    }

    /// The user's name (`None` for an admin of the console).
    pub fn username(&self) -> Option<&str> {
        match self {
            Principal::Admin { .. } => None,
            Principal::User(user) => Some(&user.username),
        }
    }
}

/// The principal a key's user stands for: the user as stored now, refused
/// when it is gone or inactive.
pub async fn principal(lore: &Corpus, username: &str) -> Result<Principal> {
    match lore.appdb_cache().user(&lore.db, username).await? {
        Some(user) if user.active => Ok(Principal::User(user)),
        Some(_) => Err(AppDbError::denied("act as", format!("user `{username}` (inactive)")).into()),
        None => Err(AppDbError::UnknownUser(username.to_owned()).into()),
    }
}

pub async fn roles(lore: &Corpus) -> Result<Vec<Role>> {
    app_role::Entity::find()
        .order_by_asc(app_role::Column::Name)
        .all(&lore.db)
        .await?
        .into_iter()
        .map(Role::decode)
        .collect()
}

/// A role by id or name.
pub async fn role(db: &impl sea_orm::ConnectionTrait, id_or_name: &str) -> Result<Role> {
    let row = match app_role::Entity::find_by_id(id_or_name.to_owned()).one(db).await? {
        Some(row) => Some(row),
        None => app_role::Entity::find().filter(app_role::Column::Name.eq(id_or_name)).one(db).await?,
    };
    Role::decode(row.ok_or_else(|| AppDbError::UnknownRole(id_or_name.to_owned()))?)
}

fn check_role_name(name: &str) -> Result<String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(AppDbError::Invalid("a role needs a name of 1 to 100 characters".into()).into());
    }
    Ok(name.to_owned())
}

pub async fn add_role(lore: &Corpus, actor: &Actor, name: &str, permission: &Value) -> Result<Role> {
    let name = check_role_name(name)?;
    let permission = Permission::parse(permission)?;
    let txn = crate::store::begin_write(&lore.db).await?;
    if app_role::Entity::find().filter(app_role::Column::Name.eq(&name)).one(&txn).await?.is_some() {
        return Err(AppDbError::AlreadyExists(format!("role `{name}`")).into());
    }
    let now = Utc::now();
    let row = app_role::ActiveModel {
        id: Set(uuid::Uuid::new_v4().to_string()),
        name: Set(name.clone()),
        permission: Set(permission.to_json()),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&txn)
    .await?;
    audit::record(&txn, actor, "role.added", Some(&row.id), json!({"role": name})).await?;
    super::cache::bump(&txn).await?;
    txn.commit().await?;
    lore.appdb_event(Event::RoleChanged);
    Role::decode(row)
}

/// Renames a role and/or replaces its permission tree.
pub async fn alter_role(
    lore: &Corpus,
    actor: &Actor,
    id: &str,
    name: Option<&str>,
    permission: Option<&Value>,
) -> Result<Role> {
    let permission = permission.map(Permission::parse).transpose()?;
    let name = name.map(check_role_name).transpose()?;
    let txn = crate::store::begin_write(&lore.db).await?;
    let current = role(&txn, id).await?;
    if let Some(name) = &name {
        let taken = app_role::Entity::find().filter(app_role::Column::Name.eq(name)).one(&txn).await?;
        if taken.is_some_and(|other| other.id != current.id) {
            return Err(AppDbError::AlreadyExists(format!("role `{name}`")).into());
        }
    }
    let mut row = app_role::ActiveModel {
        id: Set(current.id.clone()),
        updated_at: Set(Utc::now()),
        ..Default::default()
    };
    if let Some(name) = &name {
        row.name = Set(name.clone());
    }
    if let Some(permission) = &permission {
        row.permission = Set(permission.to_json());
    }
    let row = row.update(&txn).await?;
    audit::record(&txn, actor, "role.altered", Some(&row.id), json!({"role": row.name})).await?;
    super::cache::bump(&txn).await?;
    txn.commit().await?;
    lore.appdb_event(Event::RoleChanged);
    Role::decode(row)
}

/// Drops a role no user has.
pub async fn drop_role(lore: &Corpus, actor: &Actor, id: &str) -> Result<Role> {
    let txn = crate::store::begin_write(&lore.db).await?;
    let current = role(&txn, id).await?;
    if app_user::Entity::find().filter(app_user::Column::RoleId.eq(&current.id)).count(&txn).await? > 0 {
        return Err(AppDbError::RoleInUse(current.name).into());
    }
    app_role::Entity::delete_by_id(current.id.clone()).exec(&txn).await?;
    audit::record(&txn, actor, "role.dropped", Some(&current.id), json!({"role": current.name})).await?;
    super::cache::bump(&txn).await?;
    txn.commit().await?;
    lore.appdb_event(Event::RoleChanged);
    Ok(current)
}

pub async fn users(lore: &Corpus) -> Result<Vec<User>> {
    let roles = roles(lore).await?;
    let mut users = Vec::new();
    for row in app_user::Entity::find().order_by_asc(app_user::Column::Username).all(&lore.db).await? {
        let role = roles.iter().find(|role| role.id == row.role_id).cloned().ok_or_else(|| {
            crate::Error::Internal(format!("user `{}` has a role that does not exist", row.username))
        })?;
        users.push(User {
            username: row.username,
            role,
            active: row.active,
            created_at: row.created_at,
            updated_at: row.updated_at,
        });
    }
    Ok(users)
}

pub async fn user(lore: &Corpus, username: &str) -> Result<Option<User>> {
    read_user(&lore.db, username).await
}

/// A user with its role, read from the database (the cache's fill).
pub(crate) async fn read_user(db: &impl sea_orm::ConnectionTrait, username: &str) -> Result<Option<User>> {
    let Some(row) = app_user::Entity::find_by_id(username.to_owned()).one(db).await? else {
        return Ok(None);
    };
    let role = role(db, &row.role_id).await?;
    Ok(Some(User {
        username: row.username,
        role,
        active: row.active,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }))
}

fn check_username(name: &str) -> Result<String> {
    let name = name.trim();
    let valid = !name.is_empty()
        && name.chars().count() <= 100
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '@'));
    if !valid {
        return Err(AppDbError::Invalid(format!(
            "`{name}` is not a valid username (1 to 100 letters, digits, _ - . @)"
        ))
        .into());
    }
    Ok(name.to_owned())
}

pub async fn add_user(
    lore: &Corpus,
    actor: &Actor,
    username: &str,
    role_name: &str,
    active: bool,
) -> Result<User> {
    let username = check_username(username)?;
    let txn = crate::store::begin_write(&lore.db).await?;
    let role = role(&txn, role_name).await?;
    if app_user::Entity::find_by_id(username.clone()).one(&txn).await?.is_some() {
        return Err(AppDbError::AlreadyExists(format!("user `{username}`")).into());
    }
    let now = Utc::now();
    let row = app_user::ActiveModel {
        username: Set(username.clone()),
        role_id: Set(role.id.clone()),
        active: Set(active),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&txn)
    .await?;
    audit::record(&txn, actor, "user.added", Some(&username), json!({"role": role.name})).await?;
    super::cache::bump(&txn).await?;
    txn.commit().await?;
    lore.appdb_event(Event::RoleChanged);
    Ok(User { username, role, active: row.active, created_at: row.created_at, updated_at: row.updated_at })
}

/// Gives a user another role and/or (de)activates it.
pub async fn alter_user(
    lore: &Corpus,
    actor: &Actor,
    username: &str,
    role_name: Option<&str>,
    active: Option<bool>,
) -> Result<User> {
    let txn = crate::store::begin_write(&lore.db).await?;
    let row = app_user::Entity::find_by_id(username.to_owned())
        .one(&txn)
        .await?
        .ok_or_else(|| AppDbError::UnknownUser(username.to_owned()))?;
    let role = match role_name {
        Some(name) => role(&txn, name).await?,
        None => role(&txn, &row.role_id).await?,
    };
    let mut change: app_user::ActiveModel = row.into();
    change.role_id = Set(role.id.clone());
    if let Some(active) = active {
        change.active = Set(active);
    }
    change.updated_at = Set(Utc::now());
    let row = change.update(&txn).await?;
    audit::record(
        &txn,
        actor,
        "user.altered",
        Some(username),
        json!({"role": role.name, "active": row.active}),
    )
    .await?;
    super::cache::bump(&txn).await?;
    txn.commit().await?;
    lore.appdb_event(Event::RoleChanged);
    Ok(User {
        username: row.username,
        role,
        active: row.active,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

/// Drops a user; its keys stop working with it (they are revoked).
pub async fn drop_user(lore: &Corpus, actor: &Actor, username: &str) -> Result<()> {
    let txn = crate::store::begin_write(&lore.db).await?;
    if app_user::Entity::find_by_id(username.to_owned()).one(&txn).await?.is_none() {
        return Err(AppDbError::UnknownUser(username.to_owned()).into());
    }
    app_user::Entity::delete_by_id(username.to_owned()).exec(&txn).await?;
    access_key::Entity::update_many()
        .col_expr(access_key::Column::Status, sea_orm::sea_query::Expr::value("revoked"))
        .col_expr(access_key::Column::RevokedAt, sea_orm::sea_query::Expr::value(Utc::now()))
        .filter(access_key::Column::UserName.eq(username))
        .filter(access_key::Column::Status.eq("active"))
        .exec(&txn)
        .await?;
    audit::record(&txn, actor, "user.dropped", Some(username), json!({})).await?;
    super::cache::bump(&txn).await?;
    txn.commit().await?;
    lore.appdb_event(Event::RoleChanged);
    Ok(())
}

//! The versions: made on the first index, saved (gated or not), restored;
//! the single point where two saves are ordered.

use super::*;

/// Builds the profile from `persona` unless one exists; returns the active
/// version either way. The wizard's persona step and the first index call this.
pub async fn ensure(lore: &Corpus, actor: &Actor, persona_key: &str, details: Details) -> Result<Version> {
    if let Some(active) = active(lore).await? {
        return Ok(active);
    }
    let snapshot = default_snapshot(persona_key, details)?;
    let now = Utc::now();
    let id = uuid::Uuid::new_v4().to_string();
    let txn = crate::store::begin_write(&lore.db).await?;
    // The profile row first: a concurrent `ensure` fails on its primary key
    // before writing a version, and then reads the winner's.
    let created = profile::ActiveModel {
        id: Set(PROFILE_ID.to_owned()),
        active_version_id: Set(id.clone()),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&txn)
    .await;
    if created.is_err() {
        drop(txn);
        return active(lore).await?.ok_or_else(|| Error::Internal("the profile vanished".into()));
    }
    let row = insert_version(
        &txn,
        &id,
        NewRow {
            version: 1,
            based_on: None,
            snapshot: &snapshot,
            note: Some("created from the persona"),
            binding: None,
        },
        actor,
    )
    .await?;
    audit::record(&txn, actor, "profile.created", Some(&id), serde_json::json!({"persona": persona_key}))
        .await?;
    txn.commit().await?;
    version_of(row, &id)
}

pub(super) async fn insert_version(
    db: &impl sea_orm::ConnectionTrait,
    id: &str,
    new: NewRow<'_>,
    actor: &Actor,
) -> Result<profile_version::Model> {
    let NewRow { version, based_on, snapshot, note, binding } = new;
    Ok(profile_version::ActiveModel {
        id: Set(id.to_owned()),
        version: Set(version),
        based_on: Set(based_on),
        snapshot: Set(stored_form(snapshot)?),
        note: Set(note.map(str::to_owned)),
        created_by: Set(actor.label()),
        created_at: Set(Utc::now()),
        evals: Set(None),
        binding: Set(binding.map(Rebinding::stored)),
    }
    .insert(db)
    .await?)
}

/// A version row to store.
pub(super) struct NewRow<'a> {
    pub(super) version: i32,
    pub(super) based_on: Option<i32>,
    pub(super) snapshot: &'a Snapshot,
    pub(super) note: Option<&'a str>,
    /// The model binding it stands for.
    pub(super) binding: Option<&'a Rebinding>,
}

/// The version answers are made with, or `None` before the first index:
/// the active one, or, when the active one cannot be read (a record written
/// by another release, or edited by hand), the newest version that can, with
/// [`Version::serving_instead_of`] saying so. A record that cannot be read
/// never takes the answer path down; Readiness reports it, and saving or
/// restoring a version on the Prompt screen makes a readable one active.
pub async fn active(lore: &Corpus) -> Result<Option<Version>> {
    let Some(profile) = profile::Entity::find_by_id(PROFILE_ID).one(&lore.db).await? else {
        return Ok(None);
    };
    let row = profile_version::Entity::find_by_id(profile.active_version_id.clone())
        .one(&lore.db)
        .await?
        .ok_or_else(|| Error::Internal("the active profile version is missing".into()))?;
    let number = row.version;
    let mut version = match version_of(row, &profile.active_version_id) {
        Ok(version) => version,
        Err(err) => {
            let why = err.to_string();
            let mut fallback = newest_readable(lore).await?.ok_or_else(|| {
                Error::Internal(format!("no profile version can be read (the active one: {why})"))
            })?;
            tracing::error!(active = number, serving = fallback.version, error = %why, "the active profile version cannot be read; answering with the newest readable one");
            fallback.serving_instead_of = Some((number, why));
            fallback
        }
    };
    // Every change of the active version (save, restore) stamps `updated_at`.
    version.activated_at = Some(profile.updated_at);
    Ok(Some(version))
}

/// The newest version whose snapshot reads and validates.
pub(super) async fn newest_readable(lore: &Corpus) -> Result<Option<Version>> {
    let rows =
        profile_version::Entity::find().order_by_desc(profile_version::Column::Version).all(&lore.db).await?;
    Ok(rows
        .into_iter()
        .filter_map(|row| version_of(row, "").ok())
        // A candidate the gate kept inactive never serves by default.
        .find(|version| {
            validate(&version.snapshot).is_ok() && gate_refusal(version.evals.as_ref()).is_none()
        }))
}

/// The id a save or restore based on version `base` must find active: the
/// base's own, or, while the active version cannot be read and `base` is the
/// one serving instead, the unreadable active one (so the console, which
/// shows the serving version, can replace it).
pub(super) async fn expected_active_id(lore: &Corpus, base: &profile_version::Model) -> Result<String> {
    if let Some(serving) = active(lore).await? {
        if serving.serving_instead_of.is_some() && serving.version == base.version {
            if let Some(profile) = profile::Entity::find_by_id(PROFILE_ID).one(&lore.db).await? {
                return Ok(profile.active_version_id);
            }
        }
    }
    Ok(base.id.clone())
}

/// Every version, newest first.
pub async fn versions(lore: &Corpus) -> Result<Vec<Version>> {
    let Some(profile) = profile::Entity::find_by_id(PROFILE_ID).one(&lore.db).await? else {
        return Ok(Vec::new());
    };
    let rows =
        profile_version::Entity::find().order_by_desc(profile_version::Column::Version).all(&lore.db).await?;
    // A version that cannot be read is left out (and logged), so the
    // history stays usable for restoring one that can.
    Ok(rows
        .into_iter()
        .filter_map(|row| {
            let number = row.version;
            version_of(row, &profile.active_version_id)
                .inspect_err(
                    |err| tracing::warn!(version = number, error = %err, "a profile version cannot be read"),
                )
                .ok()
        })
        .collect())
}

pub async fn version(lore: &Corpus, number: i32) -> Result<Version> {
    let profile =
        profile::Entity::find_by_id(PROFILE_ID).one(&lore.db).await?.ok_or(ProfileError::NoProfile)?;
    let row = profile_version::Entity::find()
        .filter(profile_version::Column::Version.eq(number))
        .one(&lore.db)
        .await?
        .ok_or(ProfileError::UnknownVersion(number))?;
    version_of(row, &profile.active_version_id)
}

/// Stores `snapshot` as a new version and activates it, provided version
/// `base` is still the active one and, with golden questions present, the
/// new version answers them no worse than the active one (see
/// the `evals` module); a worse one is returned stored but inactive, its
/// `evals` saying why.
pub async fn save(
    lore: &Corpus,
    actor: &Actor,
    base: i32,
    snapshot: Snapshot,
    note: Option<String>,
) -> Result<Version> {
    validate(&snapshot)?;
    let note = note.map(|n| n.trim().chars().take(200).collect::<String>()).filter(|n| !n.is_empty());
    let base_row = profile_version::Entity::find()
        .filter(profile_version::Column::Version.eq(base))
        .one(&lore.db)
        .await?
        .ok_or(ProfileError::UnknownVersion(base))?;
    let expected = expected_active_id(lore, &base_row).await?;
    if lore.save_gate.applies(lore).await? {
        let (lore, actor) = (lore.clone(), actor.clone());
        return to_the_end(async move {
            let what = note.clone().unwrap_or_else(|| format!("A change to version {base}"));
            let progress = judging::Tracker::start(&lore.db, &what, &actor.label(), Step::Candidate).await?;
            let candidate = Candidate { snapshot, note, binding: None };
            let saved = save_gated(&lore, &actor, base, expected, candidate, &progress).await;
            progress.finish().await;
            saved
        })
        .await;
    }
    let id = uuid::Uuid::new_v4().to_string();
    let txn = crate::store::begin_write(&lore.db).await?;
    // The write comes first so that the transaction holds the write lock
    // before it reads anything: two saves are ordered right here.
    if !point_at(&txn, &id, Some(&expected)).await? {
        txn.rollback().await?;
        return Err(conflict(lore, base).await);
    }
    let candidate = Candidate { snapshot, note, binding: None };
    let row = insert_next(&txn, &id, base, &candidate, actor).await?;
    audit::record(
        &txn,
        actor,
        "profile.saved",
        Some(&id),
        serde_json::json!({"version": row.version, "based_on": base}),
    )
    .await?;
    txn.commit().await?;
    version_of(row, &id)
}

/// The gated save: the candidate is stored inactive (kept inactive until judged),
/// judged beside the active version, and activated only if it passed.
/// `progress` hears how far the judging got.
pub(super) async fn save_gated(
    lore: &Corpus,
    actor: &Actor,
    base: i32,
    expected: String,
    candidate: Candidate,
    progress: &judging::Tracker,
) -> Result<Version> {
    let serving = active(lore).await?.ok_or(ProfileError::NoProfile)?;
    let current =
        profile::Entity::find_by_id(PROFILE_ID).one(&lore.db).await?.ok_or(ProfileError::NoProfile)?;
    // Fail fast: judging takes a while, and a stale editor loses anyway.
    if current.active_version_id != expected {
        return Err(ProfileError::VersionConflict { base, active: serving.version }.into());
    }
    // Kept inactive until judged: a restore meanwhile (or after a crash) needs `anyway`.
    let pending = serde_json::json!({"gate": {
        "baseline_version": serving.version,
        "passed": false,
        "regressions": ["its evals have not finished"],
    }});
    let id = uuid::Uuid::new_v4().to_string();
    let txn = crate::store::begin_write(&lore.db).await?;
    let row = match insert_next(&txn, &id, base, &candidate, actor).await {
        Ok(row) => row,
        // Another save took the number meanwhile: it won the race.
        Err(Error::Database(err)) if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
            drop(txn);
            return Err(conflict(lore, base).await);
        }
        Err(err) => return Err(err),
    };
    let next = row.version;
    set_evals(&txn, &id, Some(pending)).await?;
    txn.commit().await?;
    let candidate = version_of(row, "")?;
    progress.candidate(candidate.version);
    let judged = match lore.save_gate.judge(lore, &candidate, &serving, progress).await {
        Ok(judged) => judged,
        Err(err) => {
            discard(lore, &id).await;
            return Err(err);
        }
    };
    let regressions = judged.as_ref().map(|j| j.regressions.clone()).unwrap_or_default();
    set_evals(&lore.db, &id, judged.map(|j| j.evals)).await?;
    let stored = version(lore, next).await?;
    if !regressions.is_empty() {
        tracing::info!(
            version = next,
            baseline = serving.version,
            ?regressions,
            "the save gate kept a candidate inactive"
        );
        audit::record(
            &lore.db,
            actor,
            "profile.candidate_held",
            Some(&id),
            serde_json::json!({"version": next, "based_on": base, "regressions": regressions}),
        )
        .await?;
        return Ok(stored);
    }
    match activate(lore, actor, stored, expected, base, "profile.saved").await {
        Ok(activated) => Ok(activated),
        Err(err) => {
            discard(lore, &id).await;
            Err(err)
        }
    }
}

/// A version to store and judge before it may serve.
pub(super) struct Candidate {
    pub(super) snapshot: Snapshot,
    pub(super) note: Option<String>,
    /// The model binding the candidate stands for, if any.
    pub(super) binding: Option<Rebinding>,
}

/// Stores `candidate` in `txn` as the next version, based on `base`.
pub(super) async fn insert_next(
    txn: &impl ConnectionTrait,
    id: &str,
    base: i32,
    candidate: &Candidate,
    actor: &Actor,
) -> Result<profile_version::Model> {
    let version = next_number(txn).await?;
    let row = NewRow {
        version,
        based_on: Some(base),
        snapshot: &candidate.snapshot,
        note: candidate.note.as_deref(),
        binding: candidate.binding.as_ref(),
    };
    insert_version(txn, id, row, actor).await
}

/// The number the next version takes.
pub(super) async fn next_number(db: &impl ConnectionTrait) -> Result<i32> {
    let newest =
        profile_version::Entity::find().order_by_desc(profile_version::Column::Version).one(db).await?;
    Ok(newest.map(|row| row.version + 1).unwrap_or(1))
}

/// Removes a candidate that never served (a save that failed after storing it).
pub(super) async fn discard(lore: &Corpus, id: &str) {
    let removed = profile_version::Entity::delete_by_id(id.to_owned()).exec(&lore.db).await;
    if let Err(err) = removed {
        tracing::warn!(error = %err, version = id, "a refused save's candidate could not be removed");
    }
}

pub(super) async fn set_evals(
    db: &impl ConnectionTrait,
    id: &str,
    evals: Option<serde_json::Value>,
) -> Result<()> {
    profile_version::Entity::update_many()
        .col_expr(profile_version::Column::Evals, Expr::value(evals))
        .filter(profile_version::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// Points the profile at version `id`, provided the active version is
/// still `expected` (when given): the one conditional write that orders
/// saves, activations and restores. `false`: another became active meanwhile.
pub(super) async fn point_at(db: &impl ConnectionTrait, id: &str, expected: Option<&str>) -> Result<bool> {
    let mut update = profile::Entity::update_many()
        .col_expr(profile::Column::ActiveVersionId, Expr::value(id.to_owned()))
        .col_expr(profile::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(profile::Column::Id.eq(PROFILE_ID));
    if let Some(expected) = expected {
        update = update.filter(profile::Column::ActiveVersionId.eq(expected));
    }
    Ok(update.exec(db).await?.rows_affected == 1)
}

/// The conflict a save based on version `base` lost.
pub(super) async fn conflict(lore: &Corpus, base: i32) -> Error {
    match active(lore).await {
        Ok(active) => {
            ProfileError::VersionConflict { base, active: active.map(|v| v.version).unwrap_or_default() }
                .into()
        }
        Err(err) => err,
    }
}

/// Makes `candidate` active if the active version is still `expected`.
pub(super) async fn activate(
    lore: &Corpus,
    actor: &Actor,
    candidate: Version,
    expected: String,
    base: i32,
    action: &str,
) -> Result<Version> {
    let binding = match &candidate.binding {
        Some(binding) => Some(bindable(lore, binding).await?),
        None => None,
    };
    let txn = crate::store::begin_write(&lore.db).await?;
    if !point_at(&txn, &candidate.id, Some(&expected)).await? {
        txn.rollback().await?;
        return Err(conflict(lore, base).await);
    }
    if let Some(binding) = &binding {
        binding.make_in(&txn, lore, actor).await?;
    }
    audit::record(
        &txn,
        actor,
        action,
        Some(&candidate.id),
        serde_json::json!({"version": candidate.version, "based_on": base}),
    )
    .await?;
    txn.commit().await?;
    if let Some(binding) = &binding {
        binding.made(lore).await;
    }
    Ok(Version { active: true, ..candidate })
}

/// Activates version `number` (its whole snapshot at once). `expected_active`,
/// when given, guards like [`save`]'s base. A version the eval gate kept
/// inactive needs `anyway`, which is recorded in its gate and the audit log.
pub async fn restore(
    lore: &Corpus,
    actor: &Actor,
    number: i32,
    expected_active: Option<i32>,
    anyway: bool,
) -> Result<Version> {
    let target = profile_version::Entity::find()
        .filter(profile_version::Column::Version.eq(number))
        .one(&lore.db)
        .await?
        .ok_or(ProfileError::UnknownVersion(number))?;
    let blocked = gate_refusal(target.evals.as_ref());
    if let Some((baseline, regressions)) = blocked.clone() {
        if !anyway {
            return Err(ProfileError::EvalRegression { version: number, baseline, regressions }.into());
        }
    }
    let overriding = blocked.is_some();
    // Checked before anything changes: a target gone or no longer ready
    // refuses the restore.
    let binding = match target.binding.as_ref().map(Rebinding::read).transpose()? {
        Some(binding) => Some(bindable(lore, &binding).await?),
        None => None,
    };
    let mut expected_id = None;
    if let Some(expected) = expected_active {
        let expected_row = profile_version::Entity::find()
            .filter(profile_version::Column::Version.eq(expected))
            .one(&lore.db)
            .await?
            .ok_or(ProfileError::UnknownVersion(expected))?;
        expected_id = Some(expected_active_id(lore, &expected_row).await?);
    }
    let txn = crate::store::begin_write(&lore.db).await?;
    if !point_at(&txn, &target.id, expected_id.as_deref()).await? {
        txn.rollback().await?;
        return match active(lore).await? {
            None => Err(ProfileError::NoProfile.into()),
            Some(active) => Err(ProfileError::VersionConflict {
                base: expected_active.unwrap_or_default(),
                active: active.version,
            }
            .into()),
        };
    }
    if let Some(binding) = &binding {
        binding.make_in(&txn, lore, actor).await?;
    }
    let action = if overriding { "profile.activated_anyway" } else { "profile.restored" };
    audit::record(&txn, actor, action, Some(&target.id), serde_json::json!({"version": number})).await?;
    let mut target = target;
    if overriding {
        let mut value = target.evals.clone().unwrap_or_default();
        if let Some(gate) = value.get_mut("gate").and_then(serde_json::Value::as_object_mut) {
            gate.insert(
                "activated_anyway".into(),
                serde_json::json!({"by": actor.label(), "at": Utc::now()}),
            );
        }
        set_evals(&txn, &target.id, Some(value.clone())).await?;
        target.evals = Some(value);
    }
    txn.commit().await?;
    if let Some(binding) = &binding {
        binding.made(lore).await;
    }
    let id = target.id.clone();
    version_of(target, &id)
}

/// Runs a judging to its end even when its caller stops waiting (a client
/// that went away, a proxy's timeout): its verdict lands in the candidate
/// version all the same, and its progress record shows it meanwhile,
/// instead of leaving a candidate kept inactive as "not finished" for good.
pub(super) async fn to_the_end<T: Send + 'static>(
    judging: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    tokio::spawn(judging)
        .await
        .map_err(|err| Error::Internal(format!("a judging stopped abnormally: {err}")))?
}

/// Called when an index starts: builds the profile from the chosen persona
/// the first time, and does nothing after that.
pub async fn ensure_on_first_index(lore: &Corpus, actor: &Actor) -> Result<Version> {
    if let Some(active) = active(lore).await? {
        return Ok(active);
    }
    let choice = chosen_persona(lore).await?;
    ensure(lore, actor, &choice.persona, choice.details).await
}

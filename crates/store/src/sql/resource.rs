//! SQL for resources. Every conditional write (claim, release, mark, transition) is one
//! `UPDATE … WHERE <condition> RETURNING`, so the condition and the write are atomic even
//! across processes; only when it matches no row does a second read say why.

use super::{Conn, Param, Row, exists, int, params, query_all, query_opt, session, uint};
use crate::error::{Entity, Result, StoreError};
use crate::id::{InstanceId, ResourceId, RunId, SessionId, TargetId, TurnId};
use crate::resource::{Mark, NewResource, Ownership, Resource, ResourceKind, ResourceState};

const COLUMNS: &str = "id, session_id, kind, cdp_target_id, instance, handle_lost, ownership, \
     created_by_run, claimed_at, released_at, mark, mark_turn_id, state, url, title, \
     location_at, created_at, updated_at, version, closed_by_person, closed_at, preview, branch, restored_at, restore_error";

fn parse<T>(row: &Row, column: &'static str, parse: fn(&str) -> Option<T>) -> Result<T> {
    let text = row.text(column)?;
    parse(&text).ok_or(StoreError::Corrupt {
        what: column,
        value: text,
    })
}

fn decode(row: &Row) -> Result<Resource> {
    Ok(Resource {
        id: ResourceId::new(row.text("id")?),
        session_id: row.opt_text("session_id")?.map(SessionId::new),
        kind: parse(row, "kind", ResourceKind::parse)?,
        cdp_target_id: row.opt_text("cdp_target_id")?.map(TargetId::new),
        instance: row.opt_uint("instance")?.map(InstanceId),
        handle_lost: row.bool("handle_lost")?,
        ownership: parse(row, "ownership", Ownership::parse)?,
        created_by_run: row.opt_text("created_by_run")?.map(RunId::new),
        claimed_at: row.opt_uint("claimed_at")?,
        released_at: row.opt_uint("released_at")?,
        mark: parse(row, "mark", Mark::parse)?,
        mark_turn_id: row.opt_text("mark_turn_id")?.map(TurnId::new),
        state: parse(row, "state", ResourceState::parse)?,
        url: row.opt_text("url")?,
        title: row.opt_text("title")?,
        location_at: row.opt_uint("location_at")?,
        created_at: row.uint("created_at")?,
        updated_at: row.uint("updated_at")?,
        version: row.uint("version")?,
        closed_by_person: row.bool("closed_by_person")?,
        closed_at: row.opt_uint("closed_at")?,
        preview: row.opt_text("preview")?,
        branch: row.opt_text("branch")?,
        restored_at: row.opt_uint("restored_at")?,
        restore_error: row.opt_text("restore_error")?,
    })
}

fn not_found(id: &ResourceId) -> StoreError {
    StoreError::NotFound {
        what: Entity::Resource,
        id: id.to_string(),
    }
}

fn find(c: &mut dyn Conn, id: &ResourceId) -> Result<Option<Resource>> {
    query_opt(
        c,
        &format!("SELECT {COLUMNS} FROM resources WHERE id = ?1"),
        params![id.as_str()],
        decode,
    )
}

pub(super) fn get(c: &mut dyn Conn, id: &ResourceId) -> Result<Resource> {
    find(c, id)?.ok_or_else(|| not_found(id))
}

/// Checks that `instance` is current and that no other resource holds `target`.
fn check_handle(
    c: &mut dyn Conn,
    id: &ResourceId,
    target: &TargetId,
    instance: InstanceId,
) -> Result<()> {
    // Only an instance that has not ended records handles (several may run at once: each
    // process holds its own).
    let open = exists(
        c,
        "SELECT 1 FROM instances WHERE id = ?1 AND ended_at IS NULL",
        params![int(instance.0, "instance")?],
    )?;
    if !open {
        return Err(StoreError::StaleInstance {
            given: instance,
            current: super::instance::current(c)?,
        });
    }
    let holder: Option<String> = query_opt(
        c,
        "SELECT id FROM resources WHERE cdp_target_id = ?1 AND id <> ?2",
        params![target.as_str(), id.as_str()],
        Row::first_text,
    )?;
    match holder {
        Some(by) => Err(StoreError::HandleInUse {
            by: ResourceId::new(by),
        }),
        None => Ok(()),
    }
}

pub(super) fn insert(c: &mut dyn Conn, new: &NewResource) -> Result<Resource> {
    let now = int(new.now_ms, "now_ms")?;
    if find(c, &new.id)?.is_some() {
        return Err(StoreError::AlreadyExists {
            what: Entity::Resource,
            id: new.id.to_string(),
        });
    }
    if let Some(session) = &new.session_id {
        session::require(c, session)?;
    }
    let (target, instance) = match &new.handle {
        Some((target, instance)) => {
            check_handle(c, &new.id, target, *instance)?;
            (Some(target.as_str()), Some(int(instance.0, "instance")?))
        }
        None => (None, None),
    };
    // Provenance of a resource inserted as already claimed: it was claimed now.
    let claimed_at = (new.ownership == Ownership::AgentClaimed).then_some(now);
    let resource = query_opt(
        c,
        &format!(
            "INSERT INTO resources
                 (id, session_id, kind, cdp_target_id, instance, ownership, created_by_run,
                  claimed_at, state, url, title, location_at, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,
                     CASE WHEN ?10 IS NULL AND ?11 IS NULL THEN NULL ELSE ?12 END, ?12, ?12)
             RETURNING {COLUMNS}"
        ),
        params![
            new.id.as_str(),
            new.session_id.as_ref().map(SessionId::as_str),
            new.kind.as_str(),
            target,
            instance,
            new.ownership.as_str(),
            new.created_by_run.as_ref().map(RunId::as_str),
            claimed_at,
            new.state.as_str(),
            &new.url,
            &new.title,
            now,
        ],
        decode,
    )?
    .ok_or_else(|| not_found(&new.id))?;
    Ok(resource)
}

pub(super) fn list_owned(c: &mut dyn Conn, session: &SessionId) -> Result<Vec<Resource>> {
    query_all(
        c,
        &format!("SELECT {COLUMNS} FROM resources WHERE session_id = ?1 ORDER BY created_at, id"),
        params![session.as_str()],
        decode,
    )
}

pub(super) fn list_open(c: &mut dyn Conn, session: &SessionId) -> Result<Vec<Resource>> {
    query_all(
        c,
        &format!(
            "SELECT {COLUMNS} FROM resources WHERE session_id = ?1 AND state <> 'released' \
             ORDER BY created_at, id"
        ),
        params![session.as_str()],
        decode,
    )
}

pub(super) fn count_released(c: &mut dyn Conn, session: &SessionId) -> Result<u64> {
    let rows = c.query(
        "SELECT COUNT(*) AS n FROM resources WHERE session_id = ?1 AND state = 'released'",
        params![session.as_str()],
    )?;
    match rows.first() {
        Some(row) => row.uint("n"),
        None => Ok(0),
    }
}

pub(super) fn list_unowned(c: &mut dyn Conn) -> Result<Vec<Resource>> {
    query_all(
        c,
        &format!(
            "SELECT {COLUMNS} FROM resources WHERE session_id IS NULL ORDER BY created_at, id"
        ),
        params![],
        decode,
    )
}

pub(super) fn find_by_handle(
    c: &mut dyn Conn,
    target: &TargetId,
    instance: Option<InstanceId>,
) -> Result<Option<Resource>> {
    let instance = instance.map(|i| int(i.0, "instance")).transpose()?;
    query_opt(
        c,
        &format!(
            "SELECT {COLUMNS} FROM resources
              WHERE cdp_target_id = ?1 AND instance = COALESCE(?2, (SELECT MAX(id) FROM instances))"
        ),
        params![target.as_str(), instance],
        decode,
    )
}

/// The resources whose live handle `instance` recorded.
pub(super) fn with_instance(c: &mut dyn Conn, instance: InstanceId) -> Result<Vec<Resource>> {
    query_all(
        c,
        &format!("SELECT {COLUMNS} FROM resources WHERE instance = ?1 ORDER BY created_at, id"),
        params![int(instance.0, "instance")?],
        decode,
    )
}

pub(super) fn claim(
    c: &mut dyn Conn,
    id: &ResourceId,
    session: &SessionId,
    now_ms: u64,
) -> Result<Resource> {
    let now = int(now_ms, "now_ms")?;
    session::require(c, session)?;
    let claimed = query_opt(
        c,
        &format!(
            "UPDATE resources
                SET session_id = ?2, ownership = 'agent_claimed', state = 'owned',
                    claimed_at = ?3, updated_at = ?3, version = version + 1
              WHERE id = ?1 AND closed_by_person = 0
                AND ((session_id IS NULL AND ownership = 'user')
                     OR (state = 'retained' AND session_id IN (SELECT id FROM sessions WHERE state != 'active')))
             RETURNING {COLUMNS}"
        ),
        params![id.as_str(), session.as_str(), now],
        decode,
    )?;
    let Some(resource) = claimed else {
        let current = get(c, id)?;
        return Err(match current.session_id {
            Some(by) => StoreError::AlreadyClaimed { by },
            None => StoreError::NotClaimable {
                ownership: current.ownership,
            },
        });
    };
    Ok(resource)
}

/// Why an owner-only write matched no row.
fn not_owner(c: &mut dyn Conn, id: &ResourceId, session: &SessionId) -> StoreError {
    match get(c, id) {
        Ok(current) => StoreError::NotOwner {
            resource: id.clone(),
            session: session.clone(),
            owner: current.session_id,
        },
        Err(e) => e,
    }
}

pub(super) fn release(
    c: &mut dyn Conn,
    id: &ResourceId,
    session: &SessionId,
    now_ms: u64,
) -> Result<Resource> {
    let now = int(now_ms, "now_ms")?;
    let released = query_opt(
        c,
        &format!(
            "UPDATE resources
                SET session_id = NULL, ownership = 'user', state = 'released',
                    mark = 'none', mark_turn_id = NULL,
                    released_at = ?3, updated_at = ?3, version = version + 1
              WHERE id = ?1 AND session_id = ?2
             RETURNING {COLUMNS}"
        ),
        params![id.as_str(), session.as_str(), now],
        decode,
    )?;
    let Some(resource) = released else {
        return Err(not_owner(c, id, session));
    };
    Ok(resource)
}

pub(super) fn set_mark(
    c: &mut dyn Conn,
    id: &ResourceId,
    session: &SessionId,
    mark: Mark,
    turn: &TurnId,
    now_ms: u64,
) -> Result<Resource> {
    let now = int(now_ms, "now_ms")?;
    let marked = query_opt(
        c,
        &format!(
            "UPDATE resources
                SET mark = ?3, mark_turn_id = ?4, updated_at = ?5, version = version + 1
              WHERE id = ?1 AND session_id = ?2
             RETURNING {COLUMNS}"
        ),
        params![
            id.as_str(),
            session.as_str(),
            mark.as_str(),
            turn.as_str(),
            now
        ],
        decode,
    )?;
    let Some(resource) = marked else {
        return Err(not_owner(c, id, session));
    };
    Ok(resource)
}

pub(super) fn transition(
    c: &mut dyn Conn,
    id: &ResourceId,
    expected_version: u64,
    state: ResourceState,
    now_ms: u64,
) -> Result<u64> {
    let now = int(now_ms, "now_ms")?;
    let expected = int(expected_version, "expected_version")?;
    let moved: Option<i64> = query_opt(
        c,
        "UPDATE resources SET state = ?3, updated_at = ?4, version = version + 1
          WHERE id = ?1 AND version = ?2
         RETURNING version",
        params![id.as_str(), expected, state.as_str(), now],
        |r| r.int("version"),
    )?;
    let Some(version) = moved else {
        let current = get(c, id)?;
        return Err(StoreError::Conflict {
            expected_version,
            actual: current.version,
        });
    };
    uint(version, "version")
}

pub(super) fn update_location(
    c: &mut dyn Conn,
    id: &ResourceId,
    url: &str,
    title: &str,
    now_ms: u64,
) -> Result<()> {
    note(
        c,
        id,
        now_ms,
        "url = ?3, title = ?4, location_at = ?2",
        &[url.into(), title.into()],
    )
}

pub(super) fn attach_handle(
    c: &mut dyn Conn,
    id: &ResourceId,
    target: &TargetId,
    instance: InstanceId,
    now_ms: u64,
) -> Result<Resource> {
    set_handle(c, id, target, instance, now_ms, "", "")?.ok_or_else(|| not_found(id))
}

/// Gives a resource the handle `target` of `instance` (after [`check_handle`]), with `also`
/// set besides (`, col = …`; `?4` is `now_ms`) and only where `only_if` holds (` AND …`);
/// `None` when no row was written.
fn set_handle(
    c: &mut dyn Conn,
    id: &ResourceId,
    target: &TargetId,
    instance: InstanceId,
    now_ms: u64,
    also: &'static str,
    only_if: &'static str,
) -> Result<Option<Resource>> {
    let now = int(now_ms, "now_ms")?;
    check_handle(c, id, target, instance)?;
    query_opt(
        c,
        &format!(
            "UPDATE resources
                SET cdp_target_id = ?2, instance = ?3, handle_lost = 0{also},
                    updated_at = ?4, version = version + 1
              WHERE id = ?1{only_if}
             RETURNING {COLUMNS}"
        ),
        params![
            id.as_str(),
            target.as_str(),
            int(instance.0, "instance")?,
            now
        ],
        decode,
    )
}

/// One write that does not move the version (no lifecycle decision reads what it writes):
/// `SET {set}, updated_at = ?2 WHERE id = ?1`, with `values` as `?3`, `?4`…; `NotFound` when
/// there is no such resource.
fn note(
    c: &mut dyn Conn,
    id: &ResourceId,
    now_ms: u64,
    set: &'static str,
    values: &[Param<'_>],
) -> Result<()> {
    let now = int(now_ms, "now_ms")?;
    let mut params = vec![Param::from(id.as_str()), Param::from(now)];
    params.extend_from_slice(values);
    let changed = c.execute(
        &format!("UPDATE resources SET {set}, updated_at = ?2 WHERE id = ?1"),
        &params,
    )?;
    if changed == 0 {
        return Err(not_found(id));
    }
    Ok(())
}

/// One unconditional write to a resource at `now_ms` (`?2`), answering the resource as written.
fn write(c: &mut dyn Conn, id: &ResourceId, now_ms: u64, set: &'static str) -> Result<Resource> {
    let now = int(now_ms, "now_ms")?;
    query_opt(
        c,
        &format!("UPDATE resources SET {set}, updated_at = ?2, version = version + 1 WHERE id = ?1 RETURNING {COLUMNS}"),
        params![id.as_str(), now],
        decode,
    )?
    .ok_or_else(|| not_found(id))
}

pub(super) fn clear_handle(c: &mut dyn Conn, id: &ResourceId, now_ms: u64) -> Result<Resource> {
    write(
        c,
        id,
        now_ms,
        "cdp_target_id = NULL, instance = NULL, handle_lost = 0",
    )
}

pub(super) fn close_by_person(c: &mut dyn Conn, id: &ResourceId, now_ms: u64) -> Result<Resource> {
    write(
        c,
        id,
        now_ms,
        "closed_by_person = 1, closed_at = ?2, state = 'released', cdp_target_id = NULL, instance = NULL, handle_lost = 0",
    )
}

pub(super) fn lose_handle(c: &mut dyn Conn, id: &ResourceId, now_ms: u64) -> Result<Resource> {
    write(
        c,
        id,
        now_ms,
        "cdp_target_id = NULL, instance = NULL, handle_lost = 1",
    )
}

pub(super) fn discard(c: &mut dyn Conn, id: &ResourceId) -> Result<bool> {
    let deleted = c.execute(
        "DELETE FROM resources WHERE id = ?1 AND state = 'released'
            AND NOT EXISTS (SELECT 1 FROM recovery_records WHERE resource_id = ?1)",
        params![id.as_str()],
    )?;
    Ok(deleted == 1)
}

/// Tabs to bring back: handle lost, not closed by a person, not in a failed cleanup, and kept
/// (`retained`, or marked), or a person's own (`user`, or claimed from one).
pub(super) fn restorable(c: &mut dyn Conn) -> Result<Vec<Resource>> {
    query_all(
        c,
        &format!(
            "SELECT {COLUMNS} FROM resources
              WHERE handle_lost = 1 AND closed_by_person = 0 AND kind = 'tab'
                AND state != 'cleanup_unknown'
                AND (state = 'retained' OR mark != 'none' OR ownership IN ('user', 'agent_claimed'))
              ORDER BY created_at, id"
        ),
        params![],
        decode,
    )
}

pub(super) fn restore_failed(
    c: &mut dyn Conn,
    id: &ResourceId,
    why: &str,
    now_ms: u64,
) -> Result<()> {
    note(
        c,
        id,
        now_ms,
        "restore_error = ?3, handle_lost = 0",
        &[why.into()],
    )
}

pub(super) fn restored(
    c: &mut dyn Conn,
    id: &ResourceId,
    target: &TargetId,
    instance: InstanceId,
    now_ms: u64,
) -> Result<Resource> {
    // Only while its handle is still lost: of two instances restoring it at once, one does.
    let resource = set_handle(
        c,
        id,
        target,
        instance,
        now_ms,
        ", restored_at = ?4, restore_error = NULL",
        " AND handle_lost = 1",
    )?;
    match resource {
        Some(resource) => Ok(resource),
        None => {
            let current = get(c, id)?;
            Err(StoreError::NotLost {
                id: id.clone(),
                instance: current.instance,
            })
        }
    }
}

pub(super) fn set_preview(
    c: &mut dyn Conn,
    id: &ResourceId,
    preview: &str,
    now_ms: u64,
) -> Result<()> {
    note(c, id, now_ms, "preview = ?3", &[preview.into()])
}

pub(super) fn list_all(c: &mut dyn Conn) -> Result<Vec<Resource>> {
    query_all(
        c,
        &format!("SELECT {COLUMNS} FROM resources ORDER BY created_at, id"),
        params![],
        decode,
    )
}

pub(super) fn set_branch(
    c: &mut dyn Conn,
    id: &ResourceId,
    branch: &str,
    now_ms: u64,
) -> Result<()> {
    note(c, id, now_ms, "branch = ?3", &[branch.into()])
}

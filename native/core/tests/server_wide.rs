//! `skip_server_wide`: statements whose effects reach beyond the target database are not sent to
//! a server the caller did not start, and are accounted for as skipped (`server_wide`).

mod support;

use std::sync::Arc;

use pg_retest_core::linked::LinkedWorkload;
use pg_retest_core::replay::ReplayOptions;
use pg_retest_core::wkl::QueryKind;
use pg_retest_core::workload::{WorkloadBuilder, WorkloadInfo};
use support::{fresh_database, replay_to_end, scalar, sql};

/// One session of `texts`, 1 µs apart.
fn workload(texts: &[String]) -> Arc<LinkedWorkload> {
    let mut b = WorkloadBuilder::new(WorkloadInfo::default());
    b.begin_session(1, "app".into(), "app".into());
    for (i, text) in texts.iter().enumerate() {
        b.push_statement(text, i as u64, 100, QueryKind::Other, None);
    }
    Arc::new(LinkedWorkload::new(b.finish()))
}

fn options(url: &str, skip_server_wide: bool) -> ReplayOptions {
    ReplayOptions {
        conninfo: url.to_string(),
        speed: 0.0,
        skip_server_wide,
        ..Default::default()
    }
}

/// A role of this test's own (the shared server's roles are everyone's), its password hash, and
/// the statements that would change it: plainly, inside a `DO` block, and from a text the parser
/// rejects.
async fn setup(tag: &str) -> (String, String, String, Vec<String>) {
    let url = fresh_database(tag).await;
    let role = format!("{tag}_{}", std::process::id());
    sql(
        &url,
        &format!(
            "DROP ROLE IF EXISTS {role}; CREATE ROLE {role} PASSWORD 'original'; CREATE TABLE t (v int)"
        ),
    )
    .await;
    let texts = vec![
        "INSERT INTO t VALUES (1)".to_string(),
        format!("ALTER ROLE {role} PASSWORD 'changed'"),
        format!("DO $$ BEGIN EXECUTE 'ALTER ROLE {role} CONNECTION LIMIT 3'; END $$"),
        format!("ALTER ROLE {role} WITH NOT_A_KEYWORD"),
        "DO $$ BEGIN INSERT INTO t VALUES (2); END $$".to_string(),
        "SELECT count(*) FROM t".to_string(),
    ];
    let role_state = format!(
        "SELECT rolpassword || '/' || rolconnlimit FROM pg_authid WHERE rolname = '{role}'"
    );
    (url, role, role_state, texts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_wide_statements_are_skipped_when_asked_and_the_rest_runs() {
    let (url, role, role_state, texts) = setup("skipwide").await;
    let before = scalar(&url, &role_state).await;
    let r = replay_to_end(workload(&texts), options(&url, true)).await;
    assert!(r.totals.adds_up(), "{:?}", r.totals);
    assert_eq!(r.totals.skipped_by_reason.get("server_wide"), Some(&3));
    assert_eq!((r.totals.ok, r.totals.errors), (3, 0));
    assert_eq!(scalar(&url, &role_state).await, before, "the role changed");
    // The DO block that stays in the database ran: it shares the other's fingerprint.
    assert_eq!(
        scalar(&url, "SELECT string_agg(v::text, ',' ORDER BY v) FROM t").await,
        "1,2"
    );
    sql(&url, &format!("DROP ROLE {role}")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_wide_statements_are_sent_by_default() {
    let (url, role, role_state, texts) = setup("sendwide").await;
    let before = scalar(&url, &role_state).await;
    let r = replay_to_end(workload(&texts), options(&url, false)).await;
    assert!(r.totals.adds_up(), "{:?}", r.totals);
    assert_eq!(r.totals.skipped, 0);
    // The unparsable text fails (42601); the others ran, as the superuser the test connects as.
    assert_eq!((r.totals.ok, r.totals.errors), (5, 1));
    let after = scalar(&url, &role_state).await;
    assert_ne!(after, before);
    assert!(after.ends_with("/3"), "{after}");
    sql(&url, &format!("DROP ROLE {role}")).await;
}

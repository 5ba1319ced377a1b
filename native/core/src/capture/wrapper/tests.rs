use std::io::{BufRead, Cursor, Read};

use super::*;

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/wrappers/",
            $name
        ))
    };
}

fn reader(text: &str) -> Box<dyn BufRead> {
    Box::new(Cursor::new(text.as_bytes().to_vec()))
}

/// The unwrapped text, its kind, prefix and what was skipped.
fn unwrapped(text: &str) -> (WrapperKind, String, Option<&'static str>, Skipped) {
    let spill = tempfile::tempdir().unwrap();
    let Opened::Wrapped(mut u) = open(reader(text), spill.path()).unwrap() else {
        panic!("not recognised as wrapped")
    };
    let mut out = String::new();
    u.text.read_to_string(&mut out).unwrap();
    (u.kind, out, u.prefix, u.skipped)
}

/// The number ending each line of the unwrapped text (`… SELECT 17`), in order.
fn statement_numbers(log: &str) -> Vec<u64> {
    let (_, text, _, _) = unwrapped(log);
    text.lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect()
}

fn read_error(text: &str) -> String {
    match open(reader(text), &std::env::temp_dir()) {
        Err(e) => e,
        Ok(Opened::Plain(_)) => panic!("not recognised as wrapped"),
        Ok(Opened::Wrapped(mut u)) => {
            let mut out = String::new();
            u.text.read_to_string(&mut out).unwrap_err().to_string()
        }
    }
}

#[test]
fn cloud_logging_array_newest_first_comes_out_oldest_first_with_continuations() {
    let (kind, text, prefix, skipped) = unwrapped(fixture!("cloudsql-gcloud.json"));
    assert_eq!(kind, WrapperKind::CloudLogging);
    assert_eq!(prefix, Some("%m [%p]: [%l-1] db=%d,user=%u "));
    assert_eq!(text, fixture!("cloudsql-gcloud.expected"));
    let counts = skipped.counts();
    assert_eq!(counts.get("entries_with_json_or_proto_payload"), Some(&1));
    assert_eq!(counts.get("entries_of_other_logs"), Some(&1));
    assert_eq!(skipped.total(), 2);
}

#[test]
fn cloud_logging_sink_lines_keep_multi_line_payloads() {
    let (kind, text, _, skipped) = unwrapped(fixture!("cloudsql-sink.jsonl"));
    assert_eq!(kind, WrapperKind::CloudLogging);
    assert_eq!(text, fixture!("cloudsql-sink.expected"));
    assert_eq!(skipped.total(), 1);
}

#[test]
fn equal_times_keep_the_written_order_in_either_direction() {
    let entry = |t: &str, text: &str| {
        format!(
            r#"{{"logName":"projects/p/logs/cloudsql.googleapis.com%2Fpostgres.log","textPayload":"{text}","timestamp":"{t}"}}"#
        )
    };
    let a = entry(
        "2026-11-28T10:00:00Z",
        "2026-11-28 10:00:00.000 UTC [1]: [1-1] db=d,user=u LOG:  a",
    );
    let b = entry(
        "2026-11-28T10:00:00Z",
        "2026-11-28 10:00:00.000 UTC [1]: [2-1] db=d,user=u LOG:  b",
    );
    let c = entry(
        "2026-11-28T10:00:01Z",
        "2026-11-28 10:00:01.000 UTC [1]: [3-1] db=d,user=u LOG:  c",
    );
    let want = "2026-11-28 10:00:00.000 UTC [1]: [1-1] db=d,user=u LOG:  a\n\
                2026-11-28 10:00:00.000 UTC [1]: [2-1] db=d,user=u LOG:  b\n\
                2026-11-28 10:00:01.000 UTC [1]: [3-1] db=d,user=u LOG:  c\n";
    let newest_first = format!("[{c},{b},{a}]");
    assert_eq!(unwrapped(&newest_first).1, want);
    let oldest_first = format!("[{a},{b},{c}]");
    assert_eq!(unwrapped(&oldest_first).1, want);
    let lines = format!("{a}\n{b}\n{c}\n");
    assert_eq!(unwrapped(&lines).1, want);
}

#[test]
fn azure_records_container_and_blob_lines() {
    let (kind, text, prefix, skipped) = unwrapped(fixture!("azure-eventhub.json"));
    assert_eq!(kind, WrapperKind::Azure);
    assert_eq!(prefix, Some("%t-%c-"));
    assert_eq!(text, fixture!("azure-eventhub.expected"));
    assert_eq!(
        skipped.counts().get("records_of_other_categories"),
        Some(&1)
    );
    let (kind, text, _, skipped) = unwrapped(fixture!("azure-blob.jsonl"));
    assert_eq!(kind, WrapperKind::Azure);
    assert_eq!(text, fixture!("azure-blob.expected"));
    assert_eq!(skipped.total(), 0);
}

#[test]
fn syslog_chunks_are_reassembled_and_tabs_restored() {
    let (kind, text, prefix, skipped) = unwrapped(fixture!("syslog-rfc3164.log"));
    assert_eq!(kind, WrapperKind::Syslog);
    assert_eq!(prefix, None);
    assert_eq!(text, fixture!("syslog-rfc3164.expected"));
    assert_eq!(skipped.counts().get("other_programs"), Some(&2));
}

#[test]
fn journalctl_and_rfc5424_headers() {
    let (kind, text, _, skipped) = unwrapped(fixture!("journal-mixed.log"));
    assert_eq!(kind, WrapperKind::Syslog);
    assert_eq!(text, fixture!("journal-mixed.expected"));
    assert_eq!(skipped.counts().get("journal_notes"), Some(&2));
}

#[test]
fn journald_capture_of_stderr_has_no_chunk_markers() {
    let log = "Nov 28 10:00:01 db1 postgres[4242]: 2026-11-28 10:00:01.100 UTC [4242] LOG:  statement: SELECT a,\n\
               Nov 28 10:00:01 db1 postgres[4242]: \t b\n\
               Nov 28 10:00:01 db1 postgres[4242]: [4242] LOG:  with a prefix that starts with the pid\n";
    let (_, text, _, _) = unwrapped(log);
    assert_eq!(
        text,
        "2026-11-28 10:00:01.100 UTC [4242] LOG:  statement: SELECT a,\n\t b\n[4242] LOG:  with a prefix that starts with the pid\n"
    );
}

/// PostgreSQL's `write_syslog`: a message (ending with its newline) cut into chunks.
fn server_chunks(message: &str) -> Vec<&str> {
    let b = message.as_bytes();
    let mut chunks = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        if b[pos] == b'\n' {
            pos += 1;
            continue;
        }
        let line_end = b[pos..]
            .iter()
            .position(|&c| c == b'\n')
            .unwrap_or(b.len() - pos);
        let mut len = line_end.min(900);
        if pos + len < b.len() && !b[pos + len].is_ascii_whitespace() {
            let mut i = len - 1;
            while i > 0 && !b[pos + i].is_ascii_whitespace() {
                i -= 1;
            }
            if i > 0 {
                len = i;
            }
        }
        chunks.push(&message[pos..pos + len]);
        pos += len;
    }
    chunks
}

#[test]
fn long_messages_cut_by_the_server_come_back_whole() {
    let head = "2026-11-28 10:00:01.000 UTC [77] LOG:  statement: ";
    let messages = [
        format!("{head}INSERT INTO t VALUES {}(0, 'end')", "(1, 'abcdefgh'), ".repeat(150)),
        format!("{head}SELECT '{}'", "x".repeat(2000)),
        format!(
            "{head}SELECT a,\n\tb\n\tFROM t\n2026-11-28 10:00:01.000 UTC [77] DETAIL:  parameters: $1 = '1'"
        ),
        // A space right at the 900th byte.
        format!("{head}SELECT {} {}", "y".repeat(900 - head.len() - 7), "z".repeat(50)),
        format!("{head}SELECT '{}'", "w ".repeat(1200)),
    ];
    let mut log = String::new();
    let mut other_seq = 100;
    for (seq, m) in messages.iter().enumerate() {
        for (k, chunk) in server_chunks(&format!("{m}\n")).iter().enumerate() {
            let chunk = chunk.replace('\t', "#011");
            log.push_str(&format!(
                "Nov 28 10:00:01 db1 postgres[77]: [{}-{}] {chunk}\n",
                seq + 1,
                k + 1
            ));
            // Another process's line in between.
            other_seq += 1;
            log.push_str(&format!(
                "Nov 28 10:00:01 db1 postgres[78]: [{other_seq}-1] 2026-11-28 10:00:01.000 UTC [78] LOG:  statement: SELECT {other_seq}\n"
            ));
        }
    }
    let (_, text, _, _) = unwrapped(&log);
    let mine: Vec<&str> = text
        .split_inclusive('\n')
        .filter(|l| !l.contains("[78]"))
        .collect();
    let want: String = messages.iter().map(|m| format!("{m}\n")).collect();
    assert_eq!(mine.concat(), want);
    assert!(server_chunks(&format!("{}\n", messages[0])).len() > 2);
    let theirs = text.lines().filter(|l| l.contains("[78]")).count();
    assert_eq!(theirs, other_seq - 100);
}

#[test]
fn whole_messages_with_escaped_newlines() {
    let log = "Nov 28 10:00:01 db1 postgres[9]: [3] 2026-11-28 10:00:01.000 UTC [9] LOG:  statement: SELECT a,#012#011b#012\n";
    let (_, text, _, _) = unwrapped(log);
    assert_eq!(
        text,
        "2026-11-28 10:00:01.000 UTC [9] LOG:  statement: SELECT a,\n\tb\n"
    );
}

#[test]
fn heroku_short_prefix_gets_time_and_pid() {
    let (kind, text, prefix, skipped) = unwrapped(fixture!("heroku-short.log"));
    assert_eq!(kind, WrapperKind::Heroku);
    assert_eq!(prefix, Some("%t [%p] sql_error_code = %e "));
    assert_eq!(text, fixture!("heroku-short.expected"));
    assert_eq!(skipped.counts().get("other_processes"), Some(&3));
}

#[test]
fn heroku_long_prefix_and_drain_lines() {
    let (kind, text, prefix, _) = unwrapped(fixture!("heroku-long.log"));
    assert_eq!(kind, WrapperKind::Heroku);
    assert_eq!(prefix, Some(heroku::LONG_PREFIX));
    assert_eq!(text, fixture!("heroku-long.expected"));
}

#[test]
fn heroku_app_lines_before_the_first_database_line() {
    let mut log = String::new();
    for i in 0..PEEK_LINES + 10 {
        log.push_str(&format!(
            "2026-11-28T10:00:00+00:00 app[web.1]: request {i}\n"
        ));
    }
    log.push_str(fixture!("heroku-long.log").lines().nth(1).unwrap());
    log.push('\n');
    let (kind, text, prefix, skipped) = unwrapped(&log);
    assert_eq!(kind, WrapperKind::Heroku);
    assert_eq!(prefix, Some(heroku::LONG_PREFIX));
    assert_eq!(text.lines().count(), 1);
    assert_eq!(skipped.total(), PEEK_LINES as u64 + 10);
}

#[test]
fn plain_logs_are_not_wrapped() {
    let plain = [
        "2026-11-28 10:00:00.100 UTC [4242] LOG:  statement: SELECT 1\n",
        "[4242] LOG:  statement: SELECT 1\n",
        "2026-11-28 10:00:00.100 UTC,\"app\",\"shop\",4242,\"10.0.0.5:51000\",6568b9a0.1092,1,\"SELECT\",2026-11-28 10:00:00 UTC,3/7,0,LOG,00000,\"statement: SELECT 1\",,,,,,,,,\"psql\",\"client backend\",,0\n",
        "{\"timestamp\":\"2026-11-28 10:00:00.100 UTC\",\"user\":\"app\",\"dbname\":\"shop\",\"pid\":4242,\"session_id\":\"6568b9a0.1092\",\"error_severity\":\"LOG\",\"message\":\"statement: SELECT '{\\\"textPayload\\\": 1, \\\"records\\\": []}'\"}\n",
        "2026-11-28 10:00:00 UTC-6568c5a0.2b3c-LOG:  statement: SELECT 1\n",
        // A prefix starting with %l: not RFC 5424 (which always has its <PRI>).
        "1 2026-11-28 10:00:00.100 UTC [4242] LOG:  connection authorized: user=app\n2 2026-11-28 10:00:00.200 UTC [4242] LOG:  statement: SELECT 1\n",
        "",
    ];
    for log in plain {
        assert!(unwrap(reader(log)).unwrap().is_none(), "{log:?}");
        let Opened::Plain(mut back) = open(reader(log), &std::env::temp_dir()).unwrap() else {
            panic!("{log:?} taken as wrapped")
        };
        let mut same = String::new();
        back.read_to_string(&mut same).unwrap();
        assert_eq!(same, log, "handed back whole");
    }
}

#[test]
fn malformed_json_names_the_wrapper_and_position() {
    let first =
        "{\"insertId\":\"a\",\"textPayload\":\"x\",\"timestamp\":\"2026-11-28T10:00:00Z\"}\n";
    let e = read_error(&format!(
        "{first}{{\"insertId\":\"b\" \"textPayload\":\"y\"}}\n"
    ));
    assert!(
        e.starts_with("Cloud Logging JSON, line 2 column 17: not valid JSON (expected `,` or `}`)"),
        "{e}"
    );
    let e = read_error(&format!(
        "{first}{{\"insertId\":\"b\",\"textPayload\":\"y\"\n"
    ));
    assert!(
        e.starts_with("Cloud Logging JSON: the file ends (line 3) inside an entry"),
        "{e}"
    );
}

#[test]
fn wrappers_without_postgres_lines_say_so() {
    let audit = r#"[{"insertId":"a","protoPayload":{"methodName":"x"},"timestamp":"2026-11-28T10:00:00Z"},{"insertId":"b","jsonPayload":{"k":1},"timestamp":"2026-11-28T10:00:01Z"}]"#;
    let e = read_error(audit);
    assert!(
        e.contains("no PostgreSQL log line in 2 entries (2 entries with json or proto payload)"),
        "{e}"
    );
    let e = read_error("[]");
    assert!(e.contains("no PostgreSQL log line in 0 entries"), "{e}");
    let cron = "Nov 28 10:00:01 db1 CRON[999]: (root) CMD (true)\nNov 28 10:00:02 db1 CRON[999]: (root) CMD (true)\n";
    let e = read_error(cron);
    assert!(
        e.starts_with("syslog: no PostgreSQL log line in 2 lines (2 other programs)"),
        "{e}"
    );
}

#[test]
fn mixed_sources_are_refused() {
    let two_instances = r#"{"logName":"projects/p/logs/cloudsql.googleapis.com%2Fpostgres.log","resource":{"type":"cloudsql_database","labels":{"database_id":"p:a"}},"textPayload":"2026-11-28 10:00:00.000 UTC [1]: [1-1] db=d,user=u LOG:  a","timestamp":"2026-11-28T10:00:00Z"}
{"logName":"projects/p/logs/cloudsql.googleapis.com%2Fpostgres.log","resource":{"type":"cloudsql_database","labels":{"database_id":"p:b"}},"textPayload":"2026-11-28 10:00:00.000 UTC [1]: [1-1] db=d,user=u LOG:  b","timestamp":"2026-11-28T10:00:00Z"}
"#;
    let e = read_error(two_instances);
    assert!(e.contains("several database instances (p:a, p:b)"), "{e}");
    let two_hosts =
        "Nov 28 10:00:01 db1 postgres[1]: [1-1] a\nNov 28 10:00:01 db2 postgres[1]: [1-1] b\n";
    let e = read_error(two_hosts);
    assert!(e.contains("two hosts (db1 and db2)"), "{e}");
    let two_databases = "2026-11-28T10:00:03+00:00 app[postgres.1]: [DATABASE] [1-1]  sql_error_code = 00000 LOG:  a\n\
                         2026-11-28T10:00:03+00:00 app[postgres.2]: [PINK] [1-1]  sql_error_code = 00000 LOG:  b\n";
    let e = read_error(two_databases);
    assert!(e.contains("two databases ([DATABASE] and [PINK])"), "{e}");
}

#[test]
fn a_large_array_goes_through_temporary_files_in_order() {
    // Newest first, like gcloud, and well over the unit tests' sort budget.
    let n = 5_000;
    let mut log = String::from("[");
    for i in (0..n).rev() {
        let t = chrono::DateTime::from_timestamp(1_790_000_000 + i / 10, 0).unwrap();
        log.push_str(&format!(
            r#"{{"insertId":"s=1;i={i:x};b=2","logName":"projects/p/logs/cloudsql.googleapis.com%2Fpostgres.log","textPayload":"{} UTC [1]: [{i}-1] db=d,user=u LOG:  statement: SELECT {i}","timestamp":"{}"}}{}"#,
            t.format("%Y-%m-%d %H:%M:%S%.3f"),
            t.to_rfc3339(),
            if i == 0 { "" } else { ",\n" }
        ));
    }
    log.push(']');
    assert_eq!(statement_numbers(&log), (0..n as u64).collect::<Vec<_>>());
}

/// A real server's stderr log (PostgreSQL 15, Cloud SQL's prefix, node-postgres traffic:
/// multi-line statements, parameters, a TAB inside a value, a failed INSERT, a 2 KB statement),
/// wrapped the two ways the platforms wrap it; unwrapping gives it back byte for byte.
#[test]
fn a_real_servers_log_comes_back_byte_for_byte() {
    let stderr = fixture!("real-cloudsql.stderr");
    let (kind, text, _, skipped) = unwrapped(fixture!("real-cloudsql-gcloud.json"));
    assert_eq!(kind, WrapperKind::CloudLogging);
    assert_eq!(text, stderr);
    assert_eq!(skipped.total(), 1);
    let (kind, text, _, skipped) = unwrapped(fixture!("real-syslog.log"));
    assert_eq!(kind, WrapperKind::Syslog);
    assert_eq!(text, stderr);
    assert_eq!(skipped.counts().get("other_programs"), Some(&5));
    assert!(
        fixture!("real-syslog.log").contains("[55-4] "),
        "a statement cut in four"
    );
}

/// What each wrapper gives back reads with the stderr reader and the prefix it names.
#[test]
fn the_unwrapped_text_reads_with_its_prefix() {
    use crate::capture::prefix::LinePrefix;
    use crate::capture::stderr::read_stderr;
    let cases = [
        (fixture!("cloudsql-gcloud.json"), None, 4),
        (fixture!("cloudsql-sink.jsonl"), None, 2),
        (fixture!("real-cloudsql-gcloud.json"), None, 21),
        (fixture!("azure-eventhub.json"), None, 2),
        (fixture!("azure-blob.jsonl"), None, 2),
        (fixture!("syslog-rfc3164.log"), Some("%m [%p] %q%u@%d "), 4),
        (fixture!("journal-mixed.log"), Some("%m [%p] "), 5),
        (fixture!("heroku-short.log"), None, 3),
        (fixture!("heroku-long.log"), None, 2),
    ];
    for (log, given, entries) in cases {
        let (kind, text, prefix, _) = unwrapped(log);
        let prefix = given.or(prefix).expect("a prefix");
        let mut rows = Vec::new();
        read_stderr(text.as_bytes(), LinePrefix::compile(prefix).unwrap(), |l| {
            rows.push(l.to_record());
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(rows.len(), entries, "{kind:?} {prefix:?}");
        for r in &rows {
            assert!(!r.log_time.is_empty() && !r.session_id.is_empty(), "{r:?}");
        }
    }
}

#[test]
fn odd_but_valid_entries() {
    // Azure properties written as a JSON string; an empty textPayload is skipped and counted.
    let azure = r#"{"time":"2026-11-28T12:00:00Z","resourceId":"/X/SHOP-DB","category":"PostgreSQLLogs","properties":"{\"message\":\"2026-11-28 12:00:00 UTC-6568c5a0.2b3c-LOG:  statement: SELECT 1\"}"}"#;
    let (_, text, _, _) = unwrapped(azure);
    assert_eq!(
        text,
        "2026-11-28 12:00:00 UTC-6568c5a0.2b3c-LOG:  statement: SELECT 1\n"
    );
    let cloud = r#"[{"textPayload":"","timestamp":"2026-11-28T10:00:01Z"},{"textPayload":"2026-11-28 10:00:00.000 UTC [1]: [1-1] db=d,user=u LOG:  a","timestamp":"2026-11-28T10:00:00Z"}]"#;
    let (_, text, _, skipped) = unwrapped(cloud);
    assert_eq!(
        text,
        "2026-11-28 10:00:00.000 UTC [1]: [1-1] db=d,user=u LOG:  a\n"
    );
    assert_eq!(skipped.counts().get("entries_without_text"), Some(&1));
}

#[test]
fn payloads_that_never_start_with_the_prefix_are_refused() {
    let log = r#"[{"textPayload":"LOG:  statement: SELECT 1","timestamp":"2026-11-28T10:00:00Z"}]"#;
    let e = read_error(log);
    assert!(
        e.contains("none of the 1 log lines starts with the platform's prefix (%m [%p]: [%l-1] db=%d,user=%u )"),
        "{e}"
    );
}

mod cut_by_the_server {
    use proptest::prelude::*;

    use super::{server_chunks, unwrapped};

    const HEAD: &str = "2026-11-28 10:00:01.000 UTC [77] LOG:  statement: ";
    const DETAIL: &str = "2026-11-28 10:00:01.000 UTC [77] DETAIL:  parameters: ";

    /// Words separated by spaces or TABs; `long` lets some words run past the 900-byte chunks.
    fn words(max: usize, long: bool) -> impl Strategy<Value = String> {
        let word = if long {
            prop_oneof![
                4 => "[a-z0-9(),'=$]{1,10}".boxed(),
                1 => (60usize..1100).prop_map(|n| "xyz".repeat(n / 3)).boxed(),
            ]
            .boxed()
        } else {
            "[a-z0-9(),'=$]{1,10}".boxed()
        };
        proptest::collection::vec((word, prop_oneof![Just(" "), Just("\t")]), 1..max).prop_map(
            |ws| {
                let mut s: String = ws.into_iter().map(|(w, sep)| format!("{w}{sep}")).collect();
                s.pop();
                s
            },
        )
    }

    /// A message as the server hands it to syslog (without its final newline): one line of any
    /// length, or lines under the chunk size then a last line of any length that starts with a
    /// short word (a line ending near 900 bytes, or one starting with a 900-byte word, gives
    /// the same chunks as a long line: the ambiguity chunks.rs documents).
    fn message() -> impl Strategy<Value = String> {
        let follow = prop_oneof![Just("\t"), Just(DETAIL)];
        prop_oneof![
            words(200, true).prop_map(|w| format!("{HEAD}{w}")),
            (
                words(60, false),
                proptest::collection::vec((follow, words(60, false)), 1..4),
                proptest::option::of(words(120, true)),
            )
                .prop_map(|(first, rest, last)| {
                    let mut m = format!("{HEAD}{first}");
                    for (start, w) in rest {
                        m.push_str(&format!("\n{start}{w}"));
                    }
                    if let Some(last) = last {
                        m.push_str(&format!("\n\tz {last}"));
                    }
                    m
                }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn any_message_comes_back_whole(messages in proptest::collection::vec(message(), 1..5)) {
            let mut log = String::new();
            let mut other = 0;
            for (seq, m) in messages.iter().enumerate() {
                for (k, chunk) in server_chunks(&format!("{m}\n")).iter().enumerate() {
                    log.push_str(&format!(
                        "Nov 28 10:00:01 db1 postgres[77]: [{}-{}] {}\n",
                        seq + 1,
                        k + 1,
                        chunk.replace('\t', "#011")
                    ));
                    if k % 2 == 1 {
                        other += 1;
                        log.push_str(&format!("Nov 28 10:00:01 db1 postgres[78]: [{other}-1] 2026-11-28 10:00:01.000 UTC [78] LOG:  statement: SELECT {other}\n"));
                    }
                }
            }
            let (_, text, _, _) = unwrapped(&log);
            let mine: String = text.split_inclusive('\n').filter(|l| !l.contains("[78]")).collect();
            let want: String = messages.iter().map(|m| format!("{m}\n")).collect();
            prop_assert_eq!(mine, want);
        }
    }
}

#[test]
fn entries_without_times_keep_the_files_order() {
    let n = 12_000;
    let mut log = String::new();
    for i in 0..n {
        log.push_str(&format!(
            r#"{{"category":"PostgreSQLLogs","properties":{{"message":"2026-11-28 12:00:00 UTC-6568c5a0.2b3c-LOG:  statement: SELECT {i}"}}}}"#
        ));
        log.push('\n');
    }
    assert_eq!(statement_numbers(&log), (0..n).collect::<Vec<_>>());
}

/// Through the whole capture: the real server's log, plain and wrapped both ways, gives the
/// same workload, byte for byte; what the wrappers left out is in the summary.
#[test]
fn a_capture_of_the_wrapped_log_is_the_capture_of_the_plain_one() {
    use crate::capture::{capture, CaptureOptions};
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, text: &str| {
        let log = dir.path().join(name);
        std::fs::write(&log, text).unwrap();
        let output = dir.path().join(format!("{name}.wkl"));
        let options = CaptureOptions {
            logs: vec![log],
            output: output.clone(),
            ..CaptureOptions::default()
        };
        let summary = capture(&options, &|_| {}).unwrap_or_else(|e| panic!("{name}: {e}"));
        (std::fs::read(output).unwrap(), summary)
    };
    let (plain, p) = run("plain.log", fixture!("real-cloudsql.stderr"));
    assert_eq!(p.statements, 8, "{p:?}");
    let (gcloud, g) = run("gcloud.json", fixture!("real-cloudsql-gcloud.json"));
    let (syslog, s) = run("syslog.log", fixture!("real-syslog.log"));
    assert!(plain == gcloud && plain == syslog, "the same workload");
    assert_eq!(
        (g.statements, g.failed_statements),
        (p.statements, p.failed_statements)
    );
    assert!(
        g.warnings
            .iter()
            .any(|w| w.contains("1 of the Cloud Logging JSON")),
        "{:?}",
        g.warnings
    );
    assert!(
        s.warnings.iter().any(|w| w.contains("5 other programs")),
        "{:?}",
        s.warnings
    );
}

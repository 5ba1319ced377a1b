//! What the server answered to one statement, as both paths read it (`wire.rs` from the protocol,
//! `exec.rs` from tokio-postgres): a leaf, so that the loop that reads the answer and the code that
//! times it depend on it and not on each other.

/// What the server answered to one statement, before timing and timeouts.
pub enum Answer {
    Done {
        rows: u64,
        /// The server's own time for the statement, when it sent its duration line (direct
        /// path only).
        server_us: Option<u32>,
    },
    Failed {
        sqlstate: String,
        message: String,
        /// The server's own account of the transaction after the error, from its ReadyForQuery:
        /// `Some(true)` for a failed block, `Some(false)` for no block; `None` where the client
        /// does not say (tokio-postgres).
        failed_block: Option<bool>,
    },
    Lost {
        message: String,
        sqlstate: Option<String>,
    },
}

/// A text with a NUL byte cannot go into a query message. The server would have refused the
/// message with an ERROR (the string ends before the message does) and carried on, so the
/// statement fails and the session goes on; nothing is sent.
pub fn nul_in_text() -> Answer {
    Answer::Failed {
        sqlstate: "08P01".to_string(),
        message: "the statement's text contains a NUL byte, which a query message cannot carry \
                  (the server refuses it as an invalid message)"
            .to_string(),
        failed_block: None,
    }
}

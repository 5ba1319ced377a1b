//! The parameter types the server inferred for a statement, asked on a connection of the
//! proxy's own (never on a client's: the traffic is not altered).
//!
//! Needed only for a binary value sent with no declared type, which the server read as the type
//! it inferred from the statement; the statement's description names that type. The connection
//! uses `--target`'s user (and password) in the session's database; without a user there is
//! nobody to ask, and such statements stay not replayable. Answers are kept per database and
//! statement text, so a statement is described once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio_postgres::{Client, Config};

use crate::replay::connect::Tls;

/// How long connecting or describing may take before the statement is given up.
const ASK_AT_MOST: Duration = Duration::from_secs(10);
/// Answers kept; past this they are forgotten and asked again (texts that embed literals would
/// otherwise grow the cache over a day).
const ANSWERS_AT_MOST: usize = 10_000;

type Described = Option<Vec<u32>>;

pub struct Describer {
    config: Config,
    tls: Option<Tls>,
    /// A connection per database (`None`: it could not be opened; not tried again).
    clients: tokio::sync::Mutex<HashMap<String, Option<Client>>>,
    answers: Mutex<HashMap<(String, String), Described>>,
}

impl Describer {
    pub fn new(config: Config, tls: Option<Tls>) -> Describer {
        Describer {
            config,
            tls,
            clients: tokio::sync::Mutex::new(HashMap::new()),
            answers: Mutex::new(HashMap::new()),
        }
    }

    /// The types of `sql`'s parameters as the server infers them in `database`.
    pub async fn parameter_types(&self, database: &str, sql: &str) -> Described {
        let key = (database.to_string(), sql.to_string());
        if let Some(known) = self.answers.lock().expect("not poisoned").get(&key) {
            return known.clone();
        }
        let mut clients = self.clients.lock().await;
        if !clients.contains_key(database) {
            let client = self.connect(database).await;
            clients.insert(database.to_string(), client);
        }
        let types = match clients.get(database) {
            Some(Some(client)) => tokio::time::timeout(ASK_AT_MOST, client.prepare(sql))
                .await
                .ok()
                .and_then(Result::ok)
                .map(|s| s.params().iter().map(|t| t.oid()).collect()),
            _ => None,
        };
        let mut answers = self.answers.lock().expect("not poisoned");
        if answers.len() >= ANSWERS_AT_MOST {
            answers.clear();
        }
        answers.insert(key, types.clone());
        types
    }

    async fn connect(&self, database: &str) -> Option<Client> {
        let tls = self.tls.as_ref()?;
        self.config.get_user()?;
        let mut config = self.config.clone();
        config.dbname(database);
        config.application_name("pg-retest-action proxy");
        tokio::time::timeout(ASK_AT_MOST, tls.connect(&config))
            .await
            .ok()?
            .ok()
    }
}

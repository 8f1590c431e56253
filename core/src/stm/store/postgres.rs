//! [`PostgresStore`]: ref values in a PostgreSQL table, over `tokio-postgres`.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_postgres::{Client, NoTls};

use super::{RefStore, StoreError, StoredValue, ValueId};

/// The table every [`PostgresStore`] uses (made if missing).
pub const TABLE: &str = "avout_ref_values";

/// A [`RefStore`] in PostgreSQL: one table, [`TABLE`], keyed by (root, ref name, try key),
/// with the value as `bytea` (up to 1 GiB a value, PostgreSQL's limit; values of a few MiB
/// are routine).
///
/// A put is one `INSERT` of all the try's values (one statement: all or none, durable when it
/// returns with PostgreSQL's default `synchronous_commit`). The connection is opened again,
/// once per call, when it has closed; a call whose connection fails returns
/// [`StoreError::Backend`] (a put then commits nothing: the STM rejects the transaction). A
/// put whose reply is lost may have stored its values: they are under the try's key, which
/// nothing committed points at, so collection removes them.
///
/// ```no_run
/// use std::sync::Arc;
/// use avout::stm::{Stm, StmConfig, store::PostgresStore};
/// # async fn demo(client: &avout::Client) -> Result<(), Box<dyn std::error::Error>> {
/// let store = PostgresStore::connect("host=127.0.0.1 port=5432 user=avout dbname=avout").await?;
/// let stm = Stm::open_with_store(client, "/big", StmConfig::default(), Arc::new(store)).await?;
/// let blob = stm.make_ref("blob", vec![7u8; 2 << 20]).await?;
/// assert_eq!(blob.deref().await?.len(), 2 << 20);
/// # Ok(()) }
/// ```
pub struct PostgresStore {
    config: String,
    /// Prepended to every root in the table (see [`PostgresStore::scoped`]).
    scope: String,
    client: tokio::sync::Mutex<Arc<Client>>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

fn backend(e: tokio_postgres::Error) -> StoreError {
    let detail = match e.as_db_error() {
        Some(db) => format!("{e}: {}", db.message()),
        None => e.to_string(),
    };
    StoreError::Backend {
        store: "postgres",
        detail,
    }
}

async fn open(config: &str) -> Result<Client, StoreError> {
    let (client, connection) = tokio_postgres::connect(config, NoTls)
        .await
        .map_err(backend)?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "postgres store: the connection ended");
        }
    });
    Ok(client)
}

impl PostgresStore {
    /// Connects with a `tokio-postgres` configuration (`host=… port=… user=… dbname=…`, or
    /// a `postgresql://` URL; no TLS) and makes the table if it is missing. Must be called in
    /// a tokio runtime (the connection runs as a task).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), avout::stm::store::StoreError> {
    /// let store = avout::stm::store::PostgresStore::connect("postgresql://avout@127.0.0.1:5432/avout").await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect(config: &str) -> Result<PostgresStore, StoreError> {
        let client = open(config).await?;
        client
            .batch_execute(&format!(
                "CREATE TABLE IF NOT EXISTS {TABLE} (
                    root text NOT NULL, name text NOT NULL, key text NOT NULL,
                    value bytea NOT NULL, PRIMARY KEY (root, name, key))"
            ))
            .await
            .map_err(backend)?;
        Ok(PostgresStore {
            config: config.to_owned(),
            scope: String::new(),
            client: tokio::sync::Mutex::new(Arc::new(client)),
        })
    }

    /// The same store with its roots prefixed by `scope` in the table: roots are names there,
    /// so handles on different ZooKeeper ensembles or chroots (each with its own `/bank`)
    /// that share one table must use different scopes, or each one's collection would take
    /// the other's values for garbage.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), avout::stm::store::StoreError> {
    /// use avout::stm::store::PostgresStore;
    /// let store = PostgresStore::connect("host=127.0.0.1 user=avout").await?.scoped("zk1:/app");
    /// # Ok(()) }
    /// ```
    pub fn scoped(mut self, scope: impl Into<String>) -> Self {
        self.scope = scope.into();
        self
    }

    fn scoped_root(&self, root: &str) -> String {
        format!("{}{root}", self.scope)
    }

    /// The connection, opened again if it has closed.
    async fn client(&self) -> Result<Arc<Client>, StoreError> {
        let mut client = self.client.lock().await;
        if client.is_closed() {
            *client = Arc::new(open(&self.config).await?);
        }
        Ok(client.clone())
    }
}

impl RefStore for PostgresStore {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn put<'a>(&'a self, values: &'a [StoredValue]) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let client = self.client().await?;
            let roots: Vec<String> = values.iter().map(|v| self.scoped_root(&v.root)).collect();
            let names: Vec<&str> = values.iter().map(|v| v.name.as_str()).collect();
            let keys: Vec<&str> = values.iter().map(|v| v.key.as_str()).collect();
            let bytes: Vec<&[u8]> = values.iter().map(|v| v.value.as_slice()).collect();
            client
                .execute(
                    &format!(
                        "INSERT INTO {TABLE} (root, name, key, value)
                         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[])"
                    ),
                    &[&roots, &names, &keys, &bytes],
                )
                .await
                .map_err(backend)?;
            Ok(())
        })
    }

    fn get<'a>(&'a self, id: &'a ValueId) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    &format!(
                        "SELECT value FROM {TABLE} WHERE root = $1 AND name = $2 AND key = $3"
                    ),
                    &[&self.scoped_root(&id.root), &id.name, &id.key],
                )
                .await
                .map_err(backend)?;
            Ok(row.map(|r| r.get::<_, Vec<u8>>(0)))
        })
    }

    fn list<'a>(&'a self, root: &'a str) -> BoxFuture<'a, Result<Vec<ValueId>, StoreError>> {
        Box::pin(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    &format!("SELECT name, key FROM {TABLE} WHERE root = $1 ORDER BY name, key"),
                    &[&self.scoped_root(root)],
                )
                .await
                .map_err(backend)?;
            Ok(rows
                .into_iter()
                .map(|r| ValueId {
                    root: root.to_owned(),
                    name: r.get(0),
                    key: r.get(1),
                })
                .collect())
        })
    }

    fn remove<'a>(&'a self, ids: &'a [ValueId]) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(async move {
            let client = self.client().await?;
            let roots: Vec<String> = ids.iter().map(|v| self.scoped_root(&v.root)).collect();
            let names: Vec<&str> = ids.iter().map(|v| v.name.as_str()).collect();
            let keys: Vec<&str> = ids.iter().map(|v| v.key.as_str()).collect();
            client
                .execute(
                    &format!(
                        "DELETE FROM {TABLE} t
                         USING unnest($1::text[], $2::text[], $3::text[]) AS d(root, name, key)
                         WHERE t.root = d.root AND t.name = d.name AND t.key = d.key"
                    ),
                    &[&roots, &names, &keys],
                )
                .await
                .map_err(backend)
        })
    }
}

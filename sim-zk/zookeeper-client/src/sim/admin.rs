//! [`Client`]'s operations on a node's ACL, persistent watches, `sync`, authentication and
//! the ensemble's configuration.

use std::future::Future;

use avout::zk::convert::{from_zk_acl, from_zk_watch_mode, to_zk_acls, to_zk_stat};
use avout::{Coordination, Reply, Request};

use super::client::{armed, data, reply, unexpected};
use super::path::Chroot;
use super::session::WatcherKind;
use super::watcher::{terminal_error, OneshotWatcher, PersistentWatcher, Registration};
use super::{call_error, Acl, AddWatchMode, AuthUser, Client, EnsembleUpdate, Error, Result, Stat};

/// The configuration node, whatever the root.
const CONFIG_NODE: &str = "/zookeeper/config";

impl Client {
    /// The node's ACL and [`Stat`]. Errors: `NoNode`.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let (acl, _stat) = client.get_acl("/app").await?;
    /// # let _ = acl;
    /// # Ok(())
    /// # }
    /// ```
    pub fn get_acl(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<Acl>, Stat)>> + Send + '_ {
        let sent = self.send_at(path, |path| Request::GetAcl { path });
        async move {
            match reply(sent).await?.0 {
                Reply::Acl { acl, stat } => Ok((to_zk_acls(&acl), to_zk_stat(&stat))),
                other => Err(unexpected(other)),
            }
        }
    }

    /// Sets the node's ACL if its ACL version matches (`None`: any); its new [`Stat`].
    ///
    /// Errors: `NoNode`, `BadVersion`.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// use avout_zookeeper_client::Acls;
    /// client.set_acl("/app", &Acls::anyone_read(), None).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_acl(
        &self,
        path: &str,
        acl: &[Acl],
        expected_acl_version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + '_ {
        let acl = acl.iter().map(from_zk_acl).collect();
        let sent = self.send_at(path, |path| Request::SetAcl {
            path,
            acl,
            version: expected_acl_version,
        });
        async move {
            match reply(sent).await?.0 {
                Reply::AclSet(stat) => Ok(to_zk_stat(&stat)),
                other => Err(unexpected(other)),
            }
        }
    }

    /// Watches `path` (which need not exist) for good: its own events, or its subtree's too
    /// ([`AddWatchMode::PersistentRecursive`]), and the session's states. Events during a
    /// disconnection are not reported (ZOOKEEPER-4698).
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// use avout_zookeeper_client::AddWatchMode;
    /// let mut watcher = client.watch("/config", AddWatchMode::PersistentRecursive).await?;
    /// let first = watcher.changed().await;
    /// # let _ = first;
    /// # Ok(())
    /// # }
    /// ```
    pub fn watch(
        &self,
        path: &str,
        mode: AddWatchMode,
    ) -> impl Future<Output = Result<PersistentWatcher>> + Send + '_ {
        let sent = self.server_path(path, false).map(|(server, _)| {
            let registration = Registration::new(&self.session, &server, WatcherKind::Persistent);
            let adding = self
                .session
                .client()
                .add_watch(&server, from_zk_watch_mode(mode));
            (adding, registration)
        });
        async move {
            let (adding, registration) = sent?;
            let watch = adding.await.map_err(|e| call_error(&e))?;
            Ok(PersistentWatcher::new(
                self.chroot.clone(),
                registration,
                watch,
            ))
        }
    }

    /// Waits until the session's server has caught up with the leader (`sync`, then read, is
    /// still not linearizable: ZOOKEEPER-1675).
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// client.sync("/").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn sync(&self, path: &str) -> impl Future<Output = Result<()>> + Send + '_ {
        let sent = self.send_at(path, |path| Request::Sync { path });
        async move {
            match reply(sent).await?.0 {
                Reply::Synced => Ok(()),
                other => Err(unexpected(other)),
            }
        }
    }

    /// Adds an identity to the session (for `digest`, `auth` is `user:password`); later
    /// operations are checked with it. Errors: `AuthFailed` for a scheme the server does not
    /// know (the simulated server knows `digest`).
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// client.auth("digest", b"bob:secret").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn auth(&self, scheme: &str, auth: &[u8]) -> impl Future<Output = Result<()>> + Send + '_ {
        let sent = Ok(self.send(Request::AddAuth {
            scheme: scheme.to_owned(),
            auth: auth.to_vec(),
        }));
        async move {
            match reply(sent).await?.0 {
                Reply::AuthAdded => Ok(()),
                other => Err(unexpected(other)),
            }
        }
    }

    /// The identities the session holds (ZooKeeper 3.7's `whoAmI`).
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// for user in client.list_auth_users().await? {
    ///     println!("{}:{}", user.scheme(), user.user());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn list_auth_users(&self) -> impl Future<Output = Result<Vec<AuthUser>>> + Send {
        let sent = Ok(self.send(Request::WhoAmI));
        async move {
            match reply(sent).await?.0 {
                Reply::WhoAmI(ids) => Ok(ids
                    .iter()
                    .map(|id| AuthUser::new(&id.scheme, &id.user))
                    .collect()),
                other => Err(unexpected(other)),
            }
        }
    }

    /// The data and [`Stat`] of the configuration node, `/zookeeper/config` (whatever the
    /// root).
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let (config, _stat) = client.get_config().await?;
    /// # let _ = config;
    /// # Ok(())
    /// # }
    /// ```
    pub fn get_config(&self) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send {
        let sent = Ok(self.send(Request::GetData {
            path: CONFIG_NODE.to_owned(),
            watch: false,
        }));
        async move { data(reply(sent).await?.0) }
    }

    /// [`get_config`](Self::get_config) and a watcher of the configuration's next change.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let (_config, _stat, watcher) = client.get_and_watch_config().await?;
    /// watcher.changed().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn get_and_watch_config(
        &self,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat, OneshotWatcher)>> + Send {
        let registration = Registration::new(&self.session, CONFIG_NODE, WatcherKind::Data);
        let sent = Ok(self.send(Request::GetData {
            path: CONFIG_NODE.to_owned(),
            watch: true,
        }));
        async move {
            let (reply, watch) = reply(sent).await?;
            let (data, stat) = data(reply)?;
            let watcher = OneshotWatcher::new(Chroot::default(), registration, armed(watch)?);
            Ok((data, stat, watcher))
        }
    }

    /// Changes the ensemble's membership (dynamic reconfiguration). The simulated ensemble
    /// has none: it answers `ReconfigDisabled`, as a server with `reconfigEnabled=false` (the
    /// default) does.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) {
    /// use avout_zookeeper_client::{EnsembleUpdate, Error};
    /// let update = EnsembleUpdate::New { ensemble: ["server.1=zk1:2888:3888;2181"].into_iter() };
    /// assert_eq!(client.update_ensemble(update, None).await.unwrap_err(), Error::ReconfigDisabled);
    /// # }
    /// ```
    pub fn update_ensemble<'a, I: Iterator<Item = &'a str> + Clone>(
        &self,
        update: EnsembleUpdate<'a, I>,
        expected_zxid: Option<i64>,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send {
        drop((update, expected_zxid));
        let state = self.session.state();
        async move {
            if state.is_terminated() {
                return Err(terminal_error(state));
            }
            Err(Error::ReconfigDisabled)
        }
    }
}

// The Curator peer of `avout bench cache-lag` (scenarios/tool/src/cli/cmd/bench/cache_lag.rs): the same
// run, step for step, with Curator 5.4's CuratorCache (Debian's jars). Build and run with
// scenarios/peers/cache-lag.sh. Prints one JSON line with the same keys as avout's; a write the cache
// never caught up with, or a view that differs from the tree, then prints "FAIL: ..." and exits 1.
//
// Usage: CacheLag CONNECT NODES RATE SECONDS [SETTLE_SECONDS [SEED]]
//
// 1. NODES children are created under a fresh /bench/curator/cache-lag (pipelined, in background).
// 2. CuratorCache.build(client, root) on its own session; the load is timed from start() to the
//    listener's initialized().
// 3. The writer, on another session, sets random children at RATE per second for SECONDS, open loop:
//    write i is sent at start + i/RATE (in background) whether or not earlier ones were acknowledged;
//    each acknowledgement is timestamped in its callback and keeps the version it produced.
// 4. The listener timestamps each change event. Once every write was acknowledged, the run waits
//    until the cache caught up with each (an event for its node at its version or later) or
//    SETTLE_SECONDS (default 10) passed.
// 5. Lag of a write = its first catching-up event's arrival - its acknowledgement (System.nanoTime,
//    one process). The cache's view is compared with the tree read back (data and Stat).
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import java.util.concurrent.locks.LockSupport;
import org.apache.curator.framework.*;
import org.apache.curator.framework.api.BackgroundCallback;
import org.apache.curator.framework.recipes.cache.*;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.KeeperException;

public class CacheLag {
    static final String ROOT = "/bench/curator/cache-lag";
    static final int SETUP_DEPTH = 256; // requests in flight while creating, deleting, reading back

    record Ack(String path, int version, long at) {}
    record Seen(String path, int version, long at) {}

    public static void main(String[] a) throws Exception {
        if (a.length < 4) die("usage: CacheLag CONNECT NODES RATE SECONDS [SETTLE_SECONDS [SEED]]");
        String connect = a[0];
        int nodes = Integer.parseInt(a[1]), rate = Integer.parseInt(a[2]);
        double seconds = Double.parseDouble(a[3]);
        double settle = a.length > 4 ? Double.parseDouble(a[4]) : 10;
        long seed = a.length > 5 ? Long.parseLong(a[5]) : 1;
        try (CuratorFramework writer = client(connect); CuratorFramework follower = client(connect)) {
            run(writer, follower, nodes, rate, seconds, settle, seed);
        } catch (Exception e) {
            die("cache-lag: " + e);
        }
        System.exit(0);
    }

    static void run(CuratorFramework writer, CuratorFramework follower, int nodes, int rate, double seconds,
                    double settle, long seed) throws Exception {
        clear(writer);
        writer.create().creatingParentsIfNeeded().forPath(ROOT);
        List<String> children = new ArrayList<>();
        for (int i = 0; i < nodes; i++) children.add(child(i));
        pipelined(children, (p, done) -> writer.create().inBackground(done).forPath(p, "0".getBytes()));

        Queue<Seen> seen = new ConcurrentLinkedQueue<>();
        Map<String, Integer> latest = new ConcurrentHashMap<>();
        CountDownLatch initialized = new CountDownLatch(1);
        AtomicBoolean live = new AtomicBoolean(false); // changes before initialized() are the load's
        CuratorCache cache = CuratorCache.build(follower, ROOT);
        cache.listenable().addListener(CuratorCacheListener.builder()
                .forChanges((old, node) -> {
                    if (!live.get()) return;
                    long at = System.nanoTime();
                    int v = node.getStat().getVersion();
                    latest.merge(node.getPath(), v, Math::max);
                    seen.add(new Seen(node.getPath(), v, at));
                })
                .forDeletes(node -> die("the cache reported " + node.getPath() + " deleted; nothing deletes"))
                .forInitialized(() -> { live.set(true); initialized.countDown(); })
                .build());
        long started = System.nanoTime();
        cache.start();
        if (!initialized.await(300, TimeUnit.SECONDS)) die("the cache did not load within 300 s");
        double loadSecs = (System.nanoTime() - started) / 1e9;
        int loaded = (int) cache.size();

        int total = (int) Math.round(rate * seconds);
        if (total < 1) die("RATE * SECONDS must come to at least one write");
        double interval = 1e9 / rate;
        Ack[] acks = new Ack[total];
        AtomicLong ackCount = new AtomicLong();
        CountDownLatch acked = new CountDownLatch(total);
        SplittableRandom rnd = new SplittableRandom(seed);
        long epoch = System.nanoTime();
        for (int i = 0; i < total; i++) {
            long due = epoch + (long) (i * interval);
            for (long now; (now = System.nanoTime()) < due; ) LockSupport.parkNanos(due - now);
            String p = child(rnd.nextInt(nodes));
            writer.setData().inBackground((c, e) -> {
                long at = System.nanoTime();
                if (e.getResultCode() != 0) die("set " + p + ": " + KeeperException.Code.get(e.getResultCode()));
                acks[(int) ackCount.getAndIncrement()] = new Ack(p, e.getStat().getVersion(), at);
                acked.countDown();
            }).forPath(p, "1".getBytes());
        }
        if (!acked.await(120, TimeUnit.SECONDS)) die("writes not acknowledged within 120 s");
        long writing = acks[total - 1].at - epoch;

        Map<String, Integer> want = new TreeMap<>();
        for (Ack k : acks) want.merge(k.path, k.version, Math::max);
        long deadline = System.nanoTime() + (long) (settle * 1e9);
        while (System.nanoTime() < deadline
                && !want.entrySet().stream().allMatch(w -> latest.getOrDefault(w.getKey(), -1) >= w.getValue()))
            Thread.sleep(5);
        live.set(false);
        List<Seen> events = new ArrayList<>(seen);

        boolean converged = converged(writer, cache);
        cache.close();
        clear(writer);

        // Judged as avout's lag.rs judges: the first event for the node at the write's version or later.
        Map<String, List<Seen>> byPath = new TreeMap<>();
        long duplicates = 0, regressions = 0, coalesced = 0, unseen = 0;
        for (Seen s : events) {
            List<Seen> earlier = byPath.computeIfAbsent(s.path, k -> new ArrayList<>());
            if (earlier.stream().anyMatch(e -> e.version == s.version)) duplicates++;
            else if (earlier.stream().anyMatch(e -> e.version > s.version)) regressions++;
            earlier.add(s);
        }
        long[] lags = new long[total];
        int n = 0;
        for (Ack k : acks) {
            Seen first = byPath.getOrDefault(k.path, List.of()).stream()
                    .filter(e -> e.version >= k.version).findFirst().orElse(null);
            if (first == null) { unseen++; continue; }
            if (first.version > k.version) coalesced++;
            lags[n++] = (first.at - epoch) / 1000 - (k.at - epoch) / 1000;
        }
        lags = Arrays.copyOf(lags, n);
        Arrays.sort(lags);
        int early = 0;
        while (early < n && lags[early] < 0) early++;
        double secs = writing / 1e9;
        System.out.printf(Locale.ROOT,
                "{\"peer\":\"curator\",\"workload\":\"cache-lag\",\"clients\":1,\"ops\":%d,\"secs\":%.3f,"
                        + "\"ops_per_sec\":%.1f,\"nodes\":%d,\"rate\":%d,\"load_secs\":%.3f,\"loaded\":%d,"
                        + "\"sent\":%d,\"acked\":%d,\"events\":%d,\"lag_p50_us\":%d,\"lag_p99_us\":%d,"
                        + "\"lag_p999_us\":%d,\"lag_max_us\":%d,\"early\":%d,\"coalesced\":%d,\"unseen\":%d,"
                        + "\"duplicates\":%d,\"regressions\":%d,\"converged\":%b}%n",
                total, secs, total / secs, nodes, rate, loadSecs, loaded, total, total, events.size(),
                quantile(lags, 0.5), quantile(lags, 0.99), quantile(lags, 0.999), quantile(lags, 1.0), early,
                coalesced, unseen, duplicates, regressions, converged);
        if (unseen > 0 || regressions > 0 || !converged)
            die("cache-lag: " + unseen + " writes never seen, " + regressions + " regressions, view "
                    + (converged ? "equals" : "differs from") + " the tree");
    }

    static String child(int i) { return String.format(Locale.ROOT, "%s/n-%05d", ROOT, i); }

    /** Nearest rank, as avout's; 0 with no lags. */
    static long quantile(long[] sorted, double q) {
        if (sorted.length == 0) return 0;
        int rank = Math.min(Math.max((int) Math.ceil(q * sorted.length), 1), sorted.length);
        return sorted[rank - 1];
    }

    interface Send { void send(String path, BackgroundCallback done) throws Exception; }

    /** One background request per path, at most SETUP_DEPTH in flight; any error but NONODE fails. */
    static void pipelined(Collection<String> paths, Send send) throws Exception {
        Semaphore window = new Semaphore(SETUP_DEPTH);
        CountDownLatch done = new CountDownLatch(paths.size());
        for (String p : paths) {
            window.acquire();
            send.send(p, (c, e) -> {
                int rc = e.getResultCode();
                if (rc != 0 && rc != KeeperException.Code.NONODE.intValue())
                    die(e.getType() + " " + e.getPath() + ": " + KeeperException.Code.get(rc));
                window.release();
                done.countDown();
            });
        }
        if (!done.await(120, TimeUnit.SECONDS)) die("setup requests not answered within 120 s");
    }

    /** Deletes the root and its children (leaves), pipelined. */
    static void clear(CuratorFramework c) throws Exception {
        if (c.checkExists().forPath(ROOT) == null) return;
        List<String> children = new ArrayList<>();
        for (String name : c.getChildren().forPath(ROOT)) children.add(ROOT + "/" + name);
        pipelined(children, (p, done) -> c.delete().inBackground(done).forPath(p));
        c.delete().deletingChildrenIfNeeded().forPath(ROOT);
    }

    /** Whether the cache holds exactly the tree the server has now (read after a sync). */
    static boolean converged(CuratorFramework c, CuratorCache cache) throws Exception {
        CountDownLatch synced = new CountDownLatch(1);
        c.sync().inBackground((cc, e) -> synced.countDown()).forPath(ROOT);
        if (!synced.await(30, TimeUnit.SECONDS)) die("sync not answered within 30 s");
        List<String> paths = new ArrayList<>(List.of(ROOT));
        for (String name : c.getChildren().forPath(ROOT)) paths.add(ROOT + "/" + name);
        Map<String, ChildData> tree = new ConcurrentHashMap<>();
        pipelined(paths, (p, done) -> c.getData().inBackground((cc, e) -> {
            tree.put(e.getPath(), new ChildData(e.getPath(), e.getStat(), e.getData()));
            done.processResult(cc, e);
        }).forPath(p));
        if (cache.size() != tree.size()) return false;
        for (ChildData t : tree.values()) {
            Optional<ChildData> got = cache.get(t.getPath());
            if (got.isEmpty() || !got.get().getStat().equals(t.getStat())
                    || !Arrays.equals(got.get().getData(), t.getData())) return false;
        }
        return true;
    }

    static CuratorFramework client(String connect) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(connect, 10_000, 5_000, new RetryNTimes(3, 100));
        c.start();
        if (!c.blockUntilConnected(10, TimeUnit.SECONDS)) die("cannot connect to " + connect);
        return c;
    }

    static void die(String msg) {
        System.err.println("FAIL: " + msg);
        System.out.flush();
        Runtime.getRuntime().halt(1);
    }
}

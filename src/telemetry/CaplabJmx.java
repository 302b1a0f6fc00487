// caplab's per-second JMX reader (src/telemetry/jmx_watch.rs starts it with
// `java CaplabJmx.java HOST:PORT...`, the JDK's single-file launcher). Once a second, half a
// second after each wall-clock second (so that caplab, closing its intervals on whole seconds,
// finds exactly one new reading each time), it prints for every endpoint one line of numbers:
//
//   INDEX COMPILATION_MS PROCESS_CPU_NS HEAP_USED_BYTES GC_PAUSES GC_PAUSE_MS
//         PENDING_COMPACTIONS BYTES_COMPACTED SSTABLES_PER_READ_MEAN READS READ_AT_MS
//
// from the platform MXBeans (java.lang:type=Compilation TotalCompilationTime,
// type=OperatingSystem ProcessCpuTime, type=Memory HeapMemoryUsage.used, and every
// type=GarbageCollector's CollectionCount and CollectionTime except the concurrent "Cycles" of
// ZGC and Shenandoah, whose time is not a pause) and Cassandra's metrics
// (org.apache.cassandra.metrics:type=Compaction PendingTasks and CompressedBytesCompacted, the
// SSTables' size on disk that compactions read, counted as each ends; uncompressed
// BytesCompacted before 5.0, which lacks it; and
// type=Table,name=SSTablesPerReadHistogram over all tables: its Mean and Count), then the
// wall-clock time the endpoint was read at (so that caplab, when a reading comes late on a busy
// machine, knows how long the figures cover rather than taking them for one second). Every figure
// but the heap, the pending compactions and the mean is a running total. A figure the endpoint
// does not have (a JVM that is no Cassandra) is -1. The JMX user and password come on standard
// input (two lines, empty when none), so they never show in the process list, and then the TLS
// settings: a line "tls" or an empty one, and the trust store, its password, the key store and
// its password (empty when none; the order of JmxTls::PROPERTIES in src/cluster/nodetool.rs). Over TLS the RMI registry is reached over TLS too, as
// Cassandra serves it with com.sun.management.jmxremote.ssl=true. Standard input closing
// (caplab gone) ends it. An endpoint that cannot be read prints `ERROR INDEX message`
// and ends it with status 1.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.MemoryUsage;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;
import javax.rmi.ssl.SslRMIClientSocketFactory;

public class CaplabJmx {
    static final ObjectName COMPILATION = name("java.lang:type=Compilation");
    static final ObjectName OS = name("java.lang:type=OperatingSystem");
    static final ObjectName MEMORY = name("java.lang:type=Memory");
    static final ObjectName COLLECTORS = name("java.lang:type=GarbageCollector,*");
    static final ObjectName PENDING = name("org.apache.cassandra.metrics:type=Compaction,name=PendingTasks");
    static final ObjectName COMPACTED = name("org.apache.cassandra.metrics:type=Compaction,name=BytesCompacted");
    static final ObjectName COMPRESSED = name("org.apache.cassandra.metrics:type=Compaction,name=CompressedBytesCompacted");
    static final ObjectName PER_READ = name("org.apache.cassandra.metrics:type=Table,name=SSTablesPerReadHistogram");

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String user = in.readLine();
        String password = in.readLine();
        boolean tls = "tls".equals(in.readLine());
        String[] stores = {
            "javax.net.ssl.trustStore", "javax.net.ssl.trustStorePassword", "javax.net.ssl.keyStore",
            "javax.net.ssl.keyStorePassword"
        };
        for (String property : stores) {
            String value = tls ? in.readLine() : null;
            if (value != null && !value.isEmpty()) {
                System.setProperty(property, value);
            }
        }
        Thread watchdog = new Thread(() -> {
            try {
                while (in.read() >= 0) {
                }
            } catch (Exception e) {
                // caplab's end of the pipe is gone either way
            }
            System.exit(0);
        });
        watchdog.setDaemon(true);
        watchdog.start();
        Map<String, Object> env = new HashMap<>();
        if (user != null && !user.isEmpty()) {
            env.put(JMXConnector.CREDENTIALS, new String[] {user, password == null ? "" : password});
        }
        if (tls) {
            env.put("com.sun.jndi.rmi.factory.socket", new SslRMIClientSocketFactory());
        }
        List<MBeanServerConnection> connections = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            try {
                JMXServiceURL url = new JMXServiceURL("service:jmx:rmi:///jndi/rmi://" + args[i] + "/jmxrmi");
                connections.add(JMXConnectorFactory.connect(url, env).getMBeanServerConnection());
            } catch (Exception e) {
                fail(i, e);
            }
        }
        while (true) {
            long r = System.currentTimeMillis() % 1000;
            Thread.sleep(r < 500 ? 500 - r : 1500 - r);
            StringBuilder lines = new StringBuilder();
            for (int i = 0; i < connections.size(); i++) {
                try {
                    lines.append(i).append(' ').append(read(connections.get(i))).append('\n');
                } catch (Exception e) {
                    fail(i, e);
                }
            }
            System.out.print(lines);
            System.out.flush();
        }
    }

    static String read(MBeanServerConnection c) throws Exception {
        long at = System.currentTimeMillis();
        long ms = ((Number) c.getAttribute(COMPILATION, "TotalCompilationTime")).longValue();
        long ns = ((Number) c.getAttribute(OS, "ProcessCpuTime")).longValue();
        long heap = MemoryUsage.from((CompositeData) c.getAttribute(MEMORY, "HeapMemoryUsage")).getUsed();
        long pauses = 0;
        long pauseMs = 0;
        Set<ObjectName> collectors = c.queryNames(COLLECTORS, null);
        for (ObjectName gc : collectors) {
            if (gc.getKeyProperty("name").contains("Cycles")) {
                continue;
            }
            pauses += ((Number) c.getAttribute(gc, "CollectionCount")).longValue();
            pauseMs += ((Number) c.getAttribute(gc, "CollectionTime")).longValue();
        }
        String pending = number(c, PENDING, "Value");
        // On disk (compressed) where the server says (5.0+), as flushes are counted.
        String compacted = c.isRegistered(COMPRESSED) ? number(c, COMPRESSED, "Count") : number(c, COMPACTED, "Count");
        String mean = number(c, PER_READ, "Mean");
        String reads = number(c, PER_READ, "Count");
        return ms + " " + ns + " " + heap + " " + pauses + " " + pauseMs + " " + pending + " " + compacted + " " + mean
            + " " + reads + " " + at;
    }

    /** An attribute's number, or -1 when the endpoint has no such bean (not a Cassandra). */
    static String number(MBeanServerConnection c, ObjectName bean, String attribute) throws Exception {
        if (!c.isRegistered(bean)) {
            return "-1";
        }
        Object v = c.getAttribute(bean, attribute);
        return v instanceof Number ? String.valueOf(v) : "-1";
    }

    static ObjectName name(String text) {
        try {
            return new ObjectName(text);
        } catch (Exception e) {
            throw new IllegalArgumentException(text, e);
        }
    }

    private static void fail(int index, Exception e) {
        Throwable root = e;
        while (root.getCause() != null) {
            root = root.getCause();
        }
        System.out.println("ERROR " + index + " " + String.valueOf(root).replace('\n', ' '));
        System.out.flush();
        System.exit(1);
    }
}

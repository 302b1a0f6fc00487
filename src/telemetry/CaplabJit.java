// caplab's JIT watch for clusters it does not run (src/telemetry/jit_jmx.rs starts it with
// `java CaplabJit.java HOST:PORT...`, the JDK's single-file launcher): once a second, for every
// endpoint, one line `INDEX COMPILATION_MS PROCESS_CPU_NS` from the platform MXBeans
// java.lang:type=Compilation (TotalCompilationTime) and java.lang:type=OperatingSystem
// (ProcessCpuTime). The JMX user and password come on standard input (two lines, empty when
// none), so they never show in the process list; standard input closing (caplab gone) ends it.
// An endpoint that cannot be read prints `ERROR INDEX message` and ends it with status 1.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

public class CaplabJit {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String user = in.readLine();
        String password = in.readLine();
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
        List<MBeanServerConnection> connections = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            try {
                JMXServiceURL url = new JMXServiceURL("service:jmx:rmi:///jndi/rmi://" + args[i] + "/jmxrmi");
                connections.add(JMXConnectorFactory.connect(url, env).getMBeanServerConnection());
            } catch (Exception e) {
                fail(i, e);
            }
        }
        ObjectName compilation = new ObjectName("java.lang:type=Compilation");
        ObjectName os = new ObjectName("java.lang:type=OperatingSystem");
        while (true) {
            StringBuilder lines = new StringBuilder();
            for (int i = 0; i < connections.size(); i++) {
                try {
                    MBeanServerConnection c = connections.get(i);
                    long ms = ((Number) c.getAttribute(compilation, "TotalCompilationTime")).longValue();
                    long ns = ((Number) c.getAttribute(os, "ProcessCpuTime")).longValue();
                    lines.append(i).append(' ').append(ms).append(' ').append(ns).append('\n');
                } catch (Exception e) {
                    fail(i, e);
                }
            }
            System.out.print(lines);
            System.out.flush();
            Thread.sleep(1000);
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

// Reads a full query log (Cassandra's FQL binlog, a Chronicle Queue) into caplab's trace: one JSON
// object a line per query or batch, in the order logged, written to OUT. Run with the node's own
// classpath (`java -cp 'LIB/*' CaplabFql.java DIR OUT`), so the log is read by the classes that
// wrote it. Values are the bound values' bytes as the driver sent them, in hex.
import io.netty.buffer.Unpooled;
import java.util.ArrayList;
import java.util.List;
import net.openhft.chronicle.queue.ChronicleQueue;
import net.openhft.chronicle.queue.ExcerptTailer;
import net.openhft.chronicle.wire.ValueIn;
import net.openhft.chronicle.wire.WireIn;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.transport.ProtocolVersion;

public class CaplabFql {
    public static void main(String[] args) throws java.io.IOException {
        java.io.File dir = new java.io.File(args[0]);
        StringBuilder line = new StringBuilder();
        long n = 0;
        try (ChronicleQueue queue = ChronicleQueue.singleBuilder(dir).readOnly(true).build();
             java.io.Writer out = new java.io.BufferedWriter(new java.io.FileWriter(args[1], java.nio.charset.StandardCharsets.UTF_8))) {
            ExcerptTailer tailer = queue.createTailer();
            while (tailer.readDocument(wire -> entry(wire, line))) {
                out.write(line.toString());
                line.setLength(0);
                n++;
            }
        }
        System.err.println("read " + n + " entries");
    }

    static void entry(WireIn wire, StringBuilder out) {
        wire.read("version").int16();
        String type = wire.read("type").text();
        long start = wire.read("query-start-time").int64();
        int protocol = wire.read("protocol-version").int32();
        byte[] raw = wire.read("query-options").bytes();
        long timestamp = wire.read("generated-timestamp").int64();
        wire.read("generated-now-in-seconds").int64();
        String keyspace = wire.read("keyspace").text();
        QueryOptions options = QueryOptions.codec.decode(Unpooled.wrappedBuffer(raw), ProtocolVersion.decode(protocol, true));
        out.append("{\"start_ms\":").append(start);
        out.append(",\"keyspace\":");
        str(out, keyspace);
        out.append(",\"consistency\":");
        str(out, String.valueOf(options.getConsistency()));
        out.append(",\"serial_consistency\":");
        str(out, String.valueOf(get(options, "getSerialConsistency")));
        out.append(",\"page_size\":");
        str(out, String.valueOf(get(options, "getPageSize")));
        out.append(",\"timestamp\":").append(timestamp);
        if ("single-query".equals(type)) {
            out.append(",\"query\":");
            str(out, wire.read("query").text());
            out.append(",\"values\":");
            values(out, options.getValues());
        } else {
            out.append(",\"batch_type\":");
            str(out, wire.read("batch-type").text());
            ValueIn in = wire.read("queries");
            int count = in.int32();
            out.append(",\"queries\":[");
            for (int i = 0; i < count; i++) {
                if (i > 0) out.append(',');
                str(out, in.text());
            }
            out.append("],\"values\":[");
            ValueIn vin = wire.read("values");
            int statements = vin.int32();
            for (int i = 0; i < statements; i++) {
                if (i > 0) out.append(',');
                int k = vin.int32();
                List<java.nio.ByteBuffer> vs = new ArrayList<>();
                for (int j = 0; j < k; j++) vs.add(java.nio.ByteBuffer.wrap(vin.bytes()));
                values(out, vs);
            }
            out.append(']');
        }
        out.append("}\n");
    }

    /** A getter whose signature differs between versions (no argument, or a state that may be null). */
    static Object get(Object o, String name) {
        for (java.lang.reflect.Method m : o.getClass().getMethods()) {
            if (!m.getName().equals(name) || m.getParameterCount() > 1) continue;
            try {
                return m.getParameterCount() == 0 ? m.invoke(o) : m.invoke(o, new Object[] {null});
            } catch (ReflectiveOperationException | RuntimeException e) {
                // try the next overload
            }
        }
        return null;
    }

    static void values(StringBuilder out, List<java.nio.ByteBuffer> values) {
        out.append('[');
        for (int i = 0; i < values.size(); i++) {
            if (i > 0) out.append(',');
            java.nio.ByteBuffer b = values.get(i);
            if (b == null) { out.append("null"); continue; }
            out.append('"');
            for (int j = b.position(); j < b.limit(); j++) out.append(String.format("%02x", b.get(j) & 0xff));
            out.append('"');
        }
        out.append(']');
    }

    static void str(StringBuilder out, String s) {
        if (s == null) { out.append("null"); return; }
        out.append('"');
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') out.append('\\').append(c);
            else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
            else out.append(c);
        }
        out.append('"');
    }
}

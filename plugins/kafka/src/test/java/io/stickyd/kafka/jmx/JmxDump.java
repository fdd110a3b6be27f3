package io.stickyd.kafka.jmx;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stickyd.kafka.AssignorMetrics;
import io.stickyd.kafka.StickydConsumerGroupAssignor;
import io.stickyd.kafka.StickydLoadConsumerGroupAssignor;
import io.stickyd.kafka.streams.StickydStreamsGroupAssignor;
import io.stickyd.kafka.streams.StickydTaskAssignor;
import java.lang.management.ManagementFactory;
import java.util.TreeSet;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * Prints the plug-ins' MBeans ({@code kafka.stickyd:*}) as JSON, one object per MBean with its name
 * (key properties in their own order, as the Prometheus JMX exporter reads them) and its attributes.
 *
 * <pre>
 *   java -cp CLASSPATH io.stickyd.kafka.jmx.JmxDump 127.0.0.1:9999   # a running broker's (JMX remote)
 *   java -cp CLASSPATH io.stickyd.kafka.jmx.JmxDump --local          # every plug-in's, in this JVM
 * </pre>
 */
public final class JmxDump {
    private JmxDump() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: JmxDump HOST:PORT | --local");
            System.exit(2);
        }
        if (args[0].equals("--local")) {
            new StickydConsumerGroupAssignor();
            new StickydLoadConsumerGroupAssignor();
            StickydStreamsGroupAssignor.fallbacks();
            StickydTaskAssignor.fallbacks();
            System.out.println(dump(ManagementFactory.getPlatformMBeanServer()));
            return;
        }
        JMXServiceURL url = new JMXServiceURL("service:jmx:rmi:///jndi/rmi://" + args[0] + "/jmxrmi");
        try (JMXConnector connector = JMXConnectorFactory.connect(url)) {
            System.out.println(dump(connector.getMBeanServerConnection()));
        }
    }

    static String dump(MBeanServerConnection server) throws Exception {
        ObjectMapper json = new ObjectMapper();
        ArrayNode out = json.createArrayNode();
        TreeSet<String> names = new TreeSet<>();
        server.queryNames(new ObjectName(AssignorMetrics.JMX_PREFIX + ":*"), null).forEach(n -> names.add(n.toString()));
        for (String name : names) {
            ObjectName objectName = new ObjectName(name);
            ObjectNode bean = out.addObject();
            bean.put("name", name);
            ObjectNode attributes = bean.putObject("attributes");
            for (MBeanAttributeInfo info : server.getMBeanInfo(objectName).getAttributes()) {
                Object value = server.getAttribute(objectName, info.getName());
                double number = value instanceof Number n ? n.doubleValue() : Double.NaN;
                if (Double.isFinite(number)) {
                    attributes.put(info.getName(), number);
                } else {
                    attributes.putNull(info.getName());
                }
            }
        }
        return json.writerWithDefaultPrettyPrinter().writeValueAsString(out);
    }
}

package io.stickyd.kafka.cluster;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.feature.SupportedVersionRange;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.BrokerHeartbeatRequest;
import org.apache.kafka.common.requests.BrokerHeartbeatResponse;
import org.apache.kafka.common.requests.BrokerRegistrationRequest;
import org.apache.kafka.common.requests.BrokerRegistrationResponse;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.server.BrokerFeatures;

/**
 * A broker as a KRaft controller sees one, and nothing more: it registers a broker id (with Kafka's
 * own supported features, one log directory and a PLAINTEXT listener) on the controller listener and
 * heartbeats every second as caught up and unfenced, so that the controller accepts topics whose
 * replicas are placed on it. It hosts no logs and serves no clients: its partitions exist in the
 * cluster's metadata (which a group coordinator assigns from) without a file, a descriptor or a
 * memory map on this machine. Prints "unfenced" once the controller says so; stops on SIGTERM.
 *
 * <pre>
 *   java -cp CLASSPATH io.stickyd.kafka.cluster.StandInBroker 127.0.0.1:CONTROLLER_PORT CLUSTER_ID BROKER_ID LISTENER_PORT
 * </pre>
 */
public final class StandInBroker {
    private static final long CAUGHT_UP = Long.MAX_VALUE;

    private final Socket socket;
    private final DataOutputStream out;
    private final DataInputStream in;
    private int correlationId;

    private StandInBroker(String host, int port) throws IOException {
        socket = new Socket(host, port);
        out = new DataOutputStream(socket.getOutputStream());
        in = new DataInputStream(socket.getInputStream());
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: StandInBroker CONTROLLER_HOST:PORT CLUSTER_ID BROKER_ID LISTENER_PORT");
            System.exit(2);
        }
        String[] controller = args[0].split(":");
        int brokerId = Integer.parseInt(args[2]);
        StandInBroker broker = new StandInBroker(controller[0], Integer.parseInt(controller[1]));
        long epoch = broker.register(args[1], brokerId, Integer.parseInt(args[3]));
        boolean fenced = true;
        while (true) {
            boolean nowFenced = broker.heartbeat(brokerId, epoch);
            if (fenced && !nowFenced) {
                System.out.println("unfenced");
                System.out.flush();
            }
            fenced = nowFenced;
            Thread.sleep(1000);
        }
    }

    private long register(String clusterId, int brokerId, int listenerPort) throws IOException {
        BrokerRegistrationRequestData.FeatureCollection features = new BrokerRegistrationRequestData.FeatureCollection();
        Map<String, SupportedVersionRange> supported = BrokerFeatures.defaultSupportedFeatures(true).features();
        supported.forEach((name, range) -> features.add(new BrokerRegistrationRequestData.Feature()
            .setName(name).setMinSupportedVersion(range.min()).setMaxSupportedVersion(range.max())));
        BrokerRegistrationRequestData.ListenerCollection listeners = new BrokerRegistrationRequestData.ListenerCollection();
        listeners.add(new BrokerRegistrationRequestData.Listener().setName("PLAINTEXT").setHost("127.0.0.1")
            .setPort(listenerPort).setSecurityProtocol(SecurityProtocol.PLAINTEXT.id));
        BrokerRegistrationRequestData data = new BrokerRegistrationRequestData()
            .setBrokerId(brokerId)
            .setClusterId(clusterId)
            .setIncarnationId(Uuid.randomUuid())
            .setListeners(listeners)
            .setFeatures(features)
            .setLogDirs(List.of(Uuid.randomUuid()));
        BrokerRegistrationResponse response = (BrokerRegistrationResponse) send(new BrokerRegistrationRequest.Builder(data));
        Errors error = Errors.forCode(response.data().errorCode());
        if (error != Errors.NONE) {
            throw new IllegalStateException("registration refused: " + error);
        }
        return response.data().brokerEpoch();
    }

    private boolean heartbeat(int brokerId, long epoch) throws IOException {
        BrokerHeartbeatRequestData data = new BrokerHeartbeatRequestData()
            .setBrokerId(brokerId)
            .setBrokerEpoch(epoch)
            .setCurrentMetadataOffset(CAUGHT_UP)
            .setWantFence(false)
            .setWantShutDown(false);
        BrokerHeartbeatResponse response = (BrokerHeartbeatResponse) send(new BrokerHeartbeatRequest.Builder(data));
        Errors error = Errors.forCode(response.data().errorCode());
        if (error != Errors.NONE) {
            throw new IllegalStateException("heartbeat refused: " + error);
        }
        return response.data().isFenced();
    }

    private AbstractResponse send(AbstractRequest.Builder<?> builder) throws IOException {
        ApiKeys api = builder.apiKey();
        short version = builder.latestAllowedVersion();
        RequestHeader header = new RequestHeader(api, version, "stand-in-broker", ++correlationId);
        ByteBuffer request = builder.build(version).serializeWithHeader(header);
        out.writeInt(request.remaining());
        out.write(request.array(), request.arrayOffset() + request.position(), request.remaining());
        out.flush();
        byte[] response = new byte[in.readInt()];
        in.readFully(response);
        return AbstractResponse.parseResponse(ByteBuffer.wrap(response), header);
    }
}

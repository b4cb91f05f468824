/* Runs Apache Iceberg's reference REST catalog server (iceberg-open-api test fixtures:
 * RESTCatalogServer + RESTServerCatalogAdapter over iceberg-core's RESTCatalogAdapter and
 * RESTCatalogServlet) bound to 127.0.0.1 only.
 *
 * RESTCatalogServer.main binds Jetty on every interface (new Server(port)) and has no host
 * setting, so this launcher does what its start() does -- the same backend catalog from the
 * same CATALOG_* environment (initializeBackendCatalog), the same adapter, servlet and gzip
 * handler, reuse-port -- with a connector on the loopback address. The fixture's classes are
 * package-private, hence reflection. Port: CATALOG_REST_PORT (the server's "rest.port"
 * property), default 8181. Prints "restfixture listening on 127.0.0.1:PORT" once serving.
 * Run: java -cp "$(tests/compat/restfixture.sh)" tests/compat/RestFixture.java */
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.util.Map;
import org.apache.iceberg.rest.RESTCatalogAdapter;
import org.apache.iceberg.rest.RESTCatalogServlet;
import org.apache.iceberg.util.PropertyUtil;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.gzip.GzipHandler;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

public class RestFixture {
  public static void main(String[] args) throws Exception {
    Class<?> serverClass = Class.forName("org.apache.iceberg.rest.RESTCatalogServer");
    Constructor<?> newServer = serverClass.getDeclaredConstructor();
    newServer.setAccessible(true);
    Method init = serverClass.getDeclaredMethod("initializeBackendCatalog");
    init.setAccessible(true);
    Object context = init.invoke(newServer.newInstance());

    Class<?> contextClass = Class.forName("org.apache.iceberg.rest.RESTCatalogServer$CatalogContext");
    Method configuration = contextClass.getDeclaredMethod("configuration");
    configuration.setAccessible(true);
    @SuppressWarnings("unchecked")
    Map<String, String> props = (Map<String, String>) configuration.invoke(context);

    Class<?> adapterClass = Class.forName("org.apache.iceberg.rest.RESTServerCatalogAdapter");
    Constructor<?> newAdapter = adapterClass.getDeclaredConstructor(contextClass);
    newAdapter.setAccessible(true);
    RESTCatalogAdapter adapter = (RESTCatalogAdapter) newAdapter.newInstance(context);

    ServletContextHandler handler = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    handler.addServlet(new ServletHolder(new RESTCatalogServlet(adapter)), "/*");
    handler.insertHandler(new GzipHandler());

    int port = PropertyUtil.propertyAsInt(props, "rest.port", 8181);
    Server http = new Server();
    ServerConnector connector = new ServerConnector(http);
    connector.setHost("127.0.0.1");
    connector.setPort(port);
    connector.setReusePort(true);
    http.addConnector(connector);
    http.setHandler(handler);
    http.start();
    System.out.println("restfixture listening on 127.0.0.1:" + connector.getLocalPort());
    System.out.flush();
    http.join();
  }
}

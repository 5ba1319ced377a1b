// The pgjdbc app of test/drivers/: the same session as the pgx, psycopg and node-postgres apps
// (../../../../README.md). pgjdbc runs a PreparedStatement unnamed for its first four executions
// and as a named server-side statement (S_1, …) from the fifth on (prepareThreshold 5). It sends
// int8, int4, numeric, uuid, int4[] and bytea in binary; timestamptz (OffsetDateTime), jsonb
// (PGobject) and varchar as text. The items go in one addBatch/executeBatch round trip.
package drivers;

import java.math.BigDecimal;
import java.net.URI;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import org.postgresql.util.PGobject;

public final class App {
  private static final int CUSTOMERS = 25;
  private static final String SIGN_UP =
      "INSERT INTO customers (email, name, signed_up_at, external_ref, profile) VALUES (?, ?, ?, ?, ?) RETURNING id";

  /** The apps' shared generator (a 31-bit LCG), so every app sends the same values. */
  private static long state = 35;

  private static long next() {
    state = (state * 1103515245L + 12345L) & 0x7fffffffL;
    return state;
  }

  private static UUID uuidOf(int i, long x) {
    return UUID.fromString(String.format("%08x-%04x-4%03x-8%03x-%012x", i, x & 0xffff, x % 0xfff, (x >> 8) % 0xfff, x * 7919));
  }

  private static byte[] receipt(int i, long x) {
    byte[] body = new byte[32];
    for (int k = 0; k < 32; k++) body[k] = (byte) ((i * 31 + k * 7 + x) % 256);
    body[0] = 0x00;
    body[31] = (byte) 0xff;
    return body;
  }

  private static BigDecimal cents(long c) {
    return BigDecimal.valueOf(c, 2);
  }

  private static PGobject jsonb(String json) throws SQLException {
    PGobject o = new PGobject();
    o.setType("jsonb");
    o.setValue(json);
    return o;
  }

  /** postgres://user@host:port/db (no password: the test's server trusts its own connections) as a JDBC URL. */
  private static Connection connect(String url) throws SQLException {
    URI u = URI.create(url);
    Properties props = new Properties();
    String userInfo = u.getUserInfo();
    if (userInfo != null) {
      int colon = userInfo.indexOf(':');
      props.setProperty("user", colon < 0 ? userInfo : userInfo.substring(0, colon));
      if (colon >= 0) props.setProperty("password", userInfo.substring(colon + 1));
    }
    props.setProperty("ApplicationName", "drivers-java");
    int port = u.getPort() < 0 ? 5432 : u.getPort();
    return DriverManager.getConnection("jdbc:postgresql://" + u.getHost() + ":" + port + u.getPath(), props);
  }

  public static void main(String[] args) throws Exception {
    String url = System.getenv("DATABASE_URL");
    if (url == null || url.isEmpty()) {
      System.err.println("pgjdbc app: DATABASE_URL is not set");
      System.exit(2);
    }
    OffsetDateTime base = OffsetDateTime.of(2026, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC);
    List<Long> ids = new ArrayList<>();
    List<UUID> refs = new ArrayList<>();
    int items = 0;
    try (Connection conn = connect(url);
        PreparedStatement signUp = conn.prepareStatement(SIGN_UP);
        PreparedStatement order = conn.prepareStatement("INSERT INTO orders (customer_id, placed_at, tags) VALUES (?, ?, ?) RETURNING id");
        PreparedStatement item = conn.prepareStatement("INSERT INTO order_items (order_id, sku, quantity, unit_price) VALUES (?, ?, ?, ?)");
        PreparedStatement receipt = conn.prepareStatement("INSERT INTO receipts (order_id, body) VALUES (?, ?)");
        PreparedStatement total = conn.prepareStatement(
            "UPDATE orders SET total = (SELECT sum(quantity * unit_price) FROM order_items WHERE order_id = ?), status = 'placed' WHERE id = ?");
        PreparedStatement ordersOf = conn.prepareStatement("SELECT id, total FROM orders WHERE customer_id = ? AND placed_at >= ? ORDER BY id");
        PreparedStatement byTag = conn.prepareStatement("SELECT count(*) FROM orders WHERE tags && ?");
        PreparedStatement byProfile = conn.prepareStatement("SELECT count(*) FROM customers WHERE profile @> ?");
        PreparedStatement byRef = conn.prepareStatement("SELECT name FROM customers WHERE external_ref = ?")) {
      for (int i = 0; i < CUSTOMERS; i++) {
        long x = next();
        OffsetDateTime signedUp = base.plusDays(i).plusSeconds(x % 86400).plusNanos((x % 1000) * 1_000_000L);
        UUID ref = uuidOf(i, x);
        String tier = new String[] {"gold", "silver", "bronze"}[(int) (x % 3)];
        signUp.setString(1, "customer" + i + "@example.com");
        signUp.setString(2, "Customer " + i);
        signUp.setObject(3, signedUp);
        signUp.setObject(4, ref);
        signUp.setObject(5, jsonb("{\"tier\": \"" + tier + "\", \"newsletter\": " + (x % 2 == 0) + ", \"visits\": " + (x % 50) + "}"));
        long customerId;
        try (ResultSet rs = signUp.executeQuery()) {
          rs.next();
          customerId = rs.getLong(1);
        }
        ids.add(customerId);
        refs.add(ref);

        // The order, its items (one batch), its receipt and its total, in one transaction.
        conn.setAutoCommit(false);
        order.setLong(1, customerId);
        order.setObject(2, signedUp.plusSeconds(x % 7200));
        order.setObject(3, new int[] {(int) (x % 5) + 1, (int) (x % 7) + 1});
        long orderId;
        try (ResultSet rs = order.executeQuery()) {
          rs.next();
          orderId = rs.getLong(1);
        }
        for (int k = 0; k < 3; k++) {
          long y = next();
          item.setLong(1, orderId);
          item.setString(2, "SKU-" + (y % 40));
          item.setInt(3, (int) (y % 4) + 1);
          item.setBigDecimal(4, cents(y % 5000 + 99));
          item.addBatch();
          items++;
        }
        item.executeBatch();
        receipt.setLong(1, orderId);
        receipt.setBytes(2, receipt(i, x));
        receipt.executeUpdate();
        total.setLong(1, orderId);
        total.setLong(2, orderId);
        total.executeUpdate();
        conn.commit();
        conn.setAutoCommit(true);

        // What the app reads back.
        ordersOf.setLong(1, customerId);
        ordersOf.setObject(2, signedUp);
        ordersOf.executeQuery().close();
        if (i % 2 == 0) {
          byTag.setObject(1, new int[] {i % 5 + 1});
          byTag.executeQuery().close();
        }
        if (i % 3 == 0) {
          byProfile.setObject(1, jsonb("{\"tier\": \"gold\"}"));
          byProfile.executeQuery().close();
          byRef.setObject(1, ref);
          byRef.executeQuery().close();
        }
      }

      // A customer signing up twice: the unique violation the app expects and reports.
      String duplicate = "";
      signUp.setString(1, "customer3@example.com");
      signUp.setString(2, "Customer 3 again");
      signUp.setObject(3, base);
      signUp.setObject(4, refs.get(3));
      signUp.setObject(5, jsonb("{\"tier\": \"gold\"}"));
      try {
        signUp.executeQuery().close();
      } catch (SQLException e) {
        duplicate = e.getSQLState();
      }
      if (!"23505".equals(duplicate)) throw new IllegalStateException("expected a unique violation, got " + duplicate);

      try (PreparedStatement ship = conn.prepareStatement("UPDATE orders SET status = 'shipped' WHERE customer_id = ? AND total > ?")) {
        for (long id : ids.subList(0, 5)) {
          ship.setLong(1, id);
          ship.setBigDecimal(2, cents(1000));
          ship.executeUpdate();
        }
      }
      long orders;
      try (ResultSet rs = conn.createStatement().executeQuery("SELECT count(*) FROM orders")) {
        rs.next();
        orders = rs.getLong(1);
      }
      System.out.printf(
          "{\"driver\": \"pgjdbc\", \"customers\": %d, \"orders\": %d, \"items\": %d, \"duplicate\": \"%s\"}%n", ids.size(), orders, items, duplicate);
    }
  }
}

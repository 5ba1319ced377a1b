// The pgx app of test/drivers/: a short, app-like session against the shop of ../schema.sql,
// the same one the node, python and java apps run (../README.md). pgx prepares each statement
// once and sends its parameters in binary (timestamptz, numeric, uuid, int4[], bytea, int8; jsonb
// and text as text), and sends a Batch as one pipeline (one Sync).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

const customers = 25

// rng is the apps' shared generator (a 31-bit LCG), so every app sends the same values.
type rng struct{ state uint32 }

func (r *rng) next() uint32 {
	r.state = (r.state*1103515245 + 12345) & 0x7fffffff
	return r.state
}

func must(err error, what string) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgx app: %s: %v\n", what, err)
		os.Exit(1)
	}
}

// cents turns a number of cents into a numeric with two decimals.
func cents(c int64) pgtype.Numeric {
	return pgtype.Numeric{Int: big.NewInt(c), Exp: -2, Valid: true}
}

// uuidOf gives customer i a version-4-shaped uuid from the generator's draw x.
func uuidOf(i int, x uint32) pgtype.UUID {
	var u pgtype.UUID
	must(u.Scan(fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", i, x&0xffff, x%0xfff, (x>>8)%0xfff, uint64(x)*7919)), "uuid")
	return u
}

func receipt(i int, r uint32) []byte {
	body := make([]byte, 32)
	for k := range body {
		body[k] = byte((uint32(i*31+k*7) + r) % 256)
	}
	body[0], body[31] = 0x00, 0xff
	return body
}

func main() {
	ctx := context.Background()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		fmt.Fprintln(os.Stderr, "pgx app: DATABASE_URL is not set")
		os.Exit(2)
	}
	cfg, err := pgx.ParseConfig(url)
	must(err, "DATABASE_URL")
	cfg.RuntimeParams["application_name"] = "drivers-go"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	must(err, "connect")
	defer conn.Close(ctx)

	r := &rng{state: 35}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ids := make([]int64, 0, customers)
	refs := make([]pgtype.UUID, 0, customers)
	items := 0
	for i := 0; i < customers; i++ {
		x := r.next()
		signedUp := base.Add(time.Duration(i)*24*time.Hour + time.Duration(x%86400)*time.Second + time.Duration(x%1000)*time.Millisecond)
		ref := uuidOf(i, x)
		profile := map[string]any{"tier": []string{"gold", "silver", "bronze"}[x%3], "newsletter": x%2 == 0, "visits": x % 50}
		var id int64
		must(conn.QueryRow(ctx,
			"INSERT INTO customers (email, name, signed_up_at, external_ref, profile) VALUES ($1, $2, $3, $4, $5) RETURNING id",
			fmt.Sprintf("customer%d@example.com", i), fmt.Sprintf("Customer %d", i), signedUp, ref, profile).Scan(&id), "sign-up")
		ids = append(ids, id)
		refs = append(refs, ref)

		// The order, its items (one Batch: a pipeline), its receipt and its total, in one transaction.
		tx, err := conn.Begin(ctx)
		must(err, "begin")
		var orderID int64
		placed := signedUp.Add(time.Duration(x%7200) * time.Second)
		tags := []int32{int32(x%5) + 1, int32(x%7) + 1}
		must(tx.QueryRow(ctx, "INSERT INTO orders (customer_id, placed_at, tags) VALUES ($1, $2, $3) RETURNING id", id, placed, tags).Scan(&orderID), "order")
		batch := &pgx.Batch{}
		for k := 0; k < 3; k++ {
			y := r.next()
			batch.Queue("INSERT INTO order_items (order_id, sku, quantity, unit_price) VALUES ($1, $2, $3, $4)",
				orderID, fmt.Sprintf("SKU-%d", y%40), int32(y%4)+1, cents(int64(y%5000)+99))
			items++
		}
		must(tx.SendBatch(ctx, batch).Close(), "items batch")
		_, err = tx.Exec(ctx, "INSERT INTO receipts (order_id, body) VALUES ($1, $2)", orderID, receipt(i, x))
		must(err, "receipt")
		_, err = tx.Exec(ctx, "UPDATE orders SET total = (SELECT sum(quantity * unit_price) FROM order_items WHERE order_id = $1), status = 'placed' WHERE id = $2", orderID, orderID)
		must(err, "total")
		must(tx.Commit(ctx), "commit")

		// What the app reads back.
		rows, err := conn.Query(ctx, "SELECT id, total FROM orders WHERE customer_id = $1 AND placed_at >= $2 ORDER BY id", id, signedUp)
		must(err, "orders of a customer")
		rows.Close()
		must(rows.Err(), "orders of a customer")
		if i%2 == 0 {
			var n int64
			must(conn.QueryRow(ctx, "SELECT count(*) FROM orders WHERE tags && $1", []int32{int32(i%5) + 1}).Scan(&n), "orders by tag")
		}
		if i%3 == 0 {
			var n int64
			must(conn.QueryRow(ctx, "SELECT count(*) FROM customers WHERE profile @> $1", map[string]any{"tier": "gold"}).Scan(&n), "customers by profile")
			var name string
			must(conn.QueryRow(ctx, "SELECT name FROM customers WHERE external_ref = $1", ref).Scan(&name), "customer by reference")
		}
	}

	// A customer signing up twice: the unique violation the app expects and reports.
	duplicate := ""
	var ignored int64
	err = conn.QueryRow(ctx,
		"INSERT INTO customers (email, name, signed_up_at, external_ref, profile) VALUES ($1, $2, $3, $4, $5) RETURNING id",
		"customer3@example.com", "Customer 3 again", base, refs[3], map[string]any{"tier": "gold"}).Scan(&ignored)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		fmt.Fprintf(os.Stderr, "pgx app: expected a unique violation, got %v\n", err)
		os.Exit(1)
	}
	duplicate = pgErr.Code

	for _, id := range ids[:5] {
		_, err := conn.Exec(ctx, "UPDATE orders SET status = 'shipped' WHERE customer_id = $1 AND total > $2", id, cents(1000))
		must(err, "ship")
	}
	var orders int64
	must(conn.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&orders), "count")
	out, _ := json.Marshal(map[string]any{"driver": "pgx", "customers": len(ids), "orders": orders, "items": items, "duplicate": duplicate})
	fmt.Println(string(out))
}

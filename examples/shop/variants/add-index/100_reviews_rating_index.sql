-- PR variant "add-index": an index for a "top rated first" listing of a product's reviews. The
-- workload never writes reviews and its review query is served better by
-- reviews_product_created_idx, so nothing gets slower.

CREATE INDEX reviews_product_rating_idx ON reviews (product_id, rating DESC);

-- An index on pad, which no statement of the workload filters or sorts on: it is only maintained
-- by the inserts. The variant drop-unused-index drops it, a change that must not fail the gate.

CREATE INDEX sbtest1_pad_idx ON sbtest1 (pad);
CREATE INDEX sbtest2_pad_idx ON sbtest2 (pad);
CREATE INDEX sbtest3_pad_idx ON sbtest3 (pad);
CREATE INDEX sbtest4_pad_idx ON sbtest4 (pad);

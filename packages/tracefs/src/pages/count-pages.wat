;; The recorder's record count over a batch of raw ring-buffer pages, as WebAssembly: the same walk as walkPages in
;; pages.ts (which stays the reference and reports where a page is malformed), compiled by V8 in microseconds where
;; the JavaScript loop cost 10-16 ms of optimizing compilers per recording.
;;
;; Memory (imported, sized by the caller): the pages at [start, start + pages * pageSize), and a table of 65536 f64
;; counters by common_type at `table`. Pages are little-endian, 4-byte aligned. Results are left in the globals.
(module
  (import "env" "memory" (memory 1))
  (global $records (export "records") (mut i32) (i32.const 0))
  (global $dataBytes (export "dataBytes") (mut i32) (i32.const 0))
  (global $missedPages (export "missedPages") (mut i32) (i32.const 0))

  (func (export "count")
    (param $start i32) (param $pages i32) (param $pageSize i32) (param $commitOffset i32) (param $dataOffset i32)
    (param $length i32) (param $table i32)
    (local $n i32) (local $page i32) (local $commit i32) (local $dataLength i32) (local $p i32) (local $end i32)
    (local $word i32) (local $typeLen i32) (local $len i32) (local $payload i32) (local $next i32) (local $slot i32)
    (local $records i32) (local $dataBytes i32) (local $missed i32)
    (local.set $page (local.get $start))
    (block $pagesDone
      (loop $pageLoop
        (br_if $pagesDone (i32.ge_u (local.get $n) (local.get $pages)))
        (local.set $commit (i32.load (i32.add (local.get $page) (local.get $commitOffset))))
        (if (i32.ne (i32.and (local.get $commit) (i32.const 0x80000000)) (i32.const 0))
          (then (local.set $missed (i32.add (local.get $missed) (i32.const 1)))))
        (local.set $dataLength (i32.and (local.get $commit) (i32.const 0x3fffffff)))
        (local.set $p (i32.add (local.get $page) (local.get $dataOffset)))
        (local.set $end (i32.add (local.get $p) (local.get $dataLength)))
        ;; A commit running past its page or the pages given: the page is not counted.
        (if (i32.eqz (i32.or
              (i32.gt_u (local.get $end) (i32.add (local.get $page) (local.get $pageSize)))
              (i32.gt_u (local.get $end) (local.get $length))))
          (then
            (local.set $dataBytes (i32.add (local.get $dataBytes) (local.get $dataLength)))
            (block $recordsDone
              (loop $recordLoop
                (br_if $recordsDone (i32.ge_u (local.get $p) (local.get $end)))
                (br_if $recordsDone (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 4)))
                (local.set $word (i32.load (local.get $p)))
                (local.set $typeLen (i32.and (local.get $word) (i32.const 31)))
                (block $counted
                  ;; 1..28: a data record of typeLen words.
                  (if (i32.and (i32.ne (local.get $typeLen) (i32.const 0)) (i32.le_u (local.get $typeLen) (i32.const 28)))
                    (then
                      (local.set $next (i32.add (local.get $p)
                        (i32.add (i32.const 4) (i32.shl (local.get $typeLen) (i32.const 2)))))
                      (br_if $recordsDone (i32.gt_u (local.get $next) (local.get $end)))
                      (local.set $payload (i32.add (local.get $p) (i32.const 4)))
                      (br $counted)))
                  (br_if $recordsDone (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 8)))
                  ;; 30, 31: time extend and absolute timestamp, 8 bytes.
                  (if (i32.ge_u (local.get $typeLen) (i32.const 30))
                    (then
                      (local.set $p (i32.add (local.get $p) (i32.const 8)))
                      (br $recordLoop)))
                  ;; 0 and 29 (padding) carry their length in the next word, which must fit what is left.
                  (local.set $len (i32.load (i32.add (local.get $p) (i32.const 4))))
                  (br_if $recordsDone (i32.lt_u (local.get $len) (i32.const 4)))
                  (br_if $recordsDone
                    (i32.gt_u (local.get $len) (i32.sub (i32.sub (local.get $end) (local.get $p)) (i32.const 4))))
                  (if (i32.eq (local.get $typeLen) (i32.const 29))
                    (then
                      ;; Padding with a zero delta is the end marker: nothing more on this page.
                      (br_if $recordsDone (i32.eqz (i32.shr_u (local.get $word) (i32.const 5))))
                      (local.set $p (i32.add (local.get $p) (i32.add (i32.const 4) (local.get $len))))
                      (br_if $recordsDone (i32.ne (i32.and (local.get $len) (i32.const 3)) (i32.const 0)))
                      (br $recordLoop)))
                  (local.set $payload (i32.add (local.get $p) (i32.const 8)))
                  (local.set $next (i32.add (local.get $p)
                    (i32.add (i32.const 4) (i32.and (i32.add (local.get $len) (i32.const 3)) (i32.const -4))))))
                ;; common_type: the low 16 bits of the payload's first word.
                (local.set $slot (i32.add (local.get $table) (i32.shl (i32.load16_u (local.get $payload)) (i32.const 3))))
                (f64.store (local.get $slot) (f64.add (f64.load (local.get $slot)) (f64.const 1)))
                (local.set $records (i32.add (local.get $records) (i32.const 1)))
                (local.set $p (local.get $next))
                (br $recordLoop)))))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (local.set $page (i32.add (local.get $page) (local.get $pageSize)))
        (br $pageLoop)))
    (global.set $records (local.get $records))
    (global.set $dataBytes (local.get $dataBytes))
    (global.set $missedPages (local.get $missed))))

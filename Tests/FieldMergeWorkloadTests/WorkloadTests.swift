import FieldMerge
import Testing
import FieldMergeWorkload

@Suite struct WorkloadTests {
    @Test func splitMix64_matchesSpecCheckValues() {
        var zero = SplitMix64(seed: 0)
        #expect(zero.next() == 0xe220_a839_7b1d_cdaf)
        var g = SplitMix64(seed: 42)
        #expect(g.next() == 0xbdd7_3226_2feb_6e95)
        #expect(g.next() == 0x28ef_e333_b266_f103)
        #expect(g.next() == 0x4752_6757_130f_9f52)
    }

    @Test func seed42_recordOneMatchesSpec() {
        let w = Workload.generate(records: 3)
        let expected = ReminderRow(
            title: "v626VyImx3deVzYoZ4VJs95d",
            notes: "uoUso8F4CGYpcsKOfw8MgSnG8OFme5D12nfXXzPFK INE6En2Zv3xplChUfCUE3F",
            isCompleted: true, priority: 2, dueDate: 1_705_799_398, listID: 46,
            position: 0.6651594107997011, flagged: false)
        #expect(w.base[0] == expected)
    }

    @Test func sha256_standardVectors() {
        #expect(SHA256.hex(SHA256.hash([UInt8]()))
            == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(SHA256.hash(Array("abc".utf8)))
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex(SHA256.hash(Array(
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        // Non-contiguous sequence path: one million "a".
        #expect(SHA256.hex(SHA256.hash(repeatElement(UInt8(ascii: "a"), count: 1_000_000)))
            == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func sha256_oneShotEqualsOddSizedPieces() {
        var rng = SplitMix64(seed: 7)
        let size = 1_000_003
        var data: [UInt8] = []
        data.reserveCapacity(size)
        for _ in 0..<size { data.append(UInt8(truncatingIfNeeded: rng.next())) }
        let oneShot = SHA256.hash(data)

        var hasher = SHA256.Hasher()
        let pieces = [1, 63, 64, 65, 7, 127, 4093, 0, 3, 100_001]
        var offset = 0, i = 0
        while offset < size {
            let end = min(size, offset + pieces[i % pieces.count])
            hasher.update(data[offset..<end])
            offset = end
            i += 1
        }
        #expect(hasher.finalize() == oneShot)
    }

    @Test func n10000_statsAndDigestsMatchTable() {
        let w = Workload.generate(records: 10_000, editFraction: 0.1, fieldsPerEdit: 2, seed: 42)
        #expect(w.editsA.count == 2_000)
        #expect(w.editsB.count == 2_000)
        #expect(Set(w.editsA.map(\.record)).count == 1_000)
        let stats = w.bothEditedStats()
        #expect(stats.records == 101)
        #expect(stats.fields == 67)
        #expect(Workload.digest(w.base)
            == "638cb303669bb208350133e8978679e18a04ca3424a78d4997fd109ebc8972fe")
        #expect(Workload.digest(w.editsA)
            == "b83855305cd2080159a2a87d49e54b11b6ce1ff29cb42caa760d38718117a7a3")
        #expect(Workload.digest(w.editsB)
            == "6d2358e5850f02b6ad7e3e1f467dea0594114bad857e1447cd44426b96a407c0")
        #expect(Workload.digest(w.mergedLaterWriteThenB())
            == "6d719e80533dd108dca300fe2a6459f7a5dd568a59dca443607febde9592297d")
    }

    @Test func eachReplica_writesEachRecordFieldAtMostOnce() {
        let w = Workload.generate(records: 2_000, fieldsPerEdit: 8, seed: 5)
        for edits in [w.editsA, w.editsB] {
            let pairs = Set(edits.map { $0.record * 8 + $0.field.rawValue })
            #expect(pairs.count == edits.count)
        }
    }
}

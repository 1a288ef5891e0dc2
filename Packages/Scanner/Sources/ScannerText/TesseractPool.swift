internal import CTesseract
import Foundation
import ScannerImages
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One initialised `TessBaseAPI`.
///
/// `@unchecked Sendable` is safe because an engine is only ever used by the one thread that
/// checked it out of ``TesseractPool``; the pool hands it to the next thread only after it
/// has been returned, and the hand-over goes through the pool's mutex.
final class TesseractEngine: @unchecked Sendable {
    let handle: OpaquePointer

    init(handle: OpaquePointer) { self.handle = handle }

    deinit {
        sf_TessBaseAPIEnd(handle)
        sf_TessBaseAPIDelete(handle)
    }
}

/// Engines are expensive (the model is loaded at init, ~50–100 ms); a batch should pay that
/// once per worker. Engines are created lazily, on first use, one per concurrent caller, and
/// kept idle per (tessdata, languages) for the next call. Nothing is loaded unless OCR runs:
/// not even libtesseract itself (CTesseract opens it on the first engine).
final class TesseractPool: Sendable {
    static let shared = TesseractPool()

    struct Key: Hashable {
        var tessdata: String
        var languages: String
    }

    private let idle = Mutex<[Key: [TesseractEngine]]>([:])
    /// Idle engines kept per key beyond which returned engines are freed.
    private let keep = max(2, ProcessInfo.processInfo.activeProcessorCount * 2)

    /// libtesseract's LSTM uses OpenMP; with one engine per core, more threads per engine
    /// only contend (a batch is 2-3x slower on 2 cores). libgomp reads `OMP_THREAD_LIMIT`
    /// once, when the process starts, so a library cannot set it: programs set it and
    /// re-execute themselves (as `scan --text` does), or their users export it.
    static var openMPThreadLimit: Int { Int(sf_omp_get_thread_limit()) }

    /// Runs `body` with an engine for `key`, creating one when none is idle.
    func withEngine<T>(
        _ key: Key,
        input: String,
        _ body: (TesseractEngine) throws(OCRError) -> T
    ) throws(OCRError) -> T {
        let engine: TesseractEngine
        if let reused = idle.withLock({ $0[key]?.popLast() }) {
            engine = reused
        } else {
            engine = try make(key, input: input)
        }
        defer {
            sf_TessBaseAPIClear(engine.handle)
            idle.withLock { table in
                if table[key, default: []].count < keep { table[key, default: []].append(engine) }
            }
        }
        return try body(engine)
    }

    /// Idle engines for `key` (tests check that a batch reuses them).
    func idleCount(_ key: Key) -> Int { idle.withLock { $0[key]?.count ?? 0 } }

    private func make(_ key: Key, input: String) throws(OCRError) -> TesseractEngine {
        // libtesseract is mapped on the first engine, not when the program starts.
        var reason = [CChar](repeating: 0, count: 256)
        guard sf_tess_load(&reason, reason.count) == 0 else {
            let detail = String(decoding: reason.prefix { $0 != 0 }.map(UInt8.init), as: UTF8.self)
            throw OCRError(
                code: .engineFailed,
                input: input,
                message: "could not load libtesseract (install libtesseract5)",
                cause: detail.isEmpty ? nil : detail
            )
        }
        guard let handle = sf_TessBaseAPICreate() else {
            throw OCRError(
                code: .engineFailed,
                input: input,
                message: "could not create a Tesseract engine"
            )
        }
        let engine = TesseractEngine(handle: handle)
        // Tesseract prints diagnostics to stderr; libraries never print.
        _ = sf_TessBaseAPISetVariable(handle, "debug_file", "/dev/null")
        let status = sf_TessBaseAPIInit3(handle, key.tessdata, key.languages)
        guard status == 0 else {
            throw OCRError(
                code: .engineFailed,
                input: input,
                message: "Tesseract could not load \(key.languages) from \(key.tessdata)"
            )
        }
        _ = sf_TessBaseAPISetVariable(handle, "debug_file", "/dev/null")
        return engine
    }
}

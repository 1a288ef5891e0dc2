import Foundation
import ScannerImages
import Testing

@testable import ScannerBarcodes

@Suite("EAN-13 and UPC-A too blurred for edges: modules fitted")
struct BlurredUPCEANTests {
    static let reader = BarcodeReader()

    /// A zint symbol (2 px modules) on a white margin, blurred by `sigma` pixels, with a
    /// little seeded noise.
    static func blurred(
        _ type: String,
        _ data: String,
        sigma: Double,
        extra: [String] = []
    ) throws -> ImageBuffer {
        let code = try Fixtures.zint(type, data, extra: ["--scale=1", "--height=40"])
        let photo = try Fixtures.convert(
            code,
            to: "png",
            options: [
                "-colorspace", "gray", "-bordercolor", "white", "-border", "20", "-blur",
                "0x\(sigma)", "-seed", "3", "-attenuate", "0.2", "+noise", "Gaussian",
            ] + extra
        )
        return try ImageBuffer(data: photo, name: "\(type) blurred \(sigma)").greyscale()
    }

    @Test(
        "An EAN-13 blurred by up to a module reads, fitted, where the edge readers read nothing",
        arguments: [("5901234123457", 1.6), ("4006381333931", 2.0), ("0705632441947", 2.0)]
    )
    func blurredEAN13(text: String, sigma: Double) throws {
        let image = try Self.blurred("EANX", String(text.dropLast()), sigma: sigma)
        let codes = Self.reader.scan(image)
        #expect(codes.map(\.text) == [text] || codes.map(\.text) == ["0" + text])
        #expect(codes.map(\.engine) == [.templates])
        let code = try #require(codes.first)
        // The corners span the bars: 95 modules of 2 px from x = 42.
        #expect(abs(code.points[0].x - 42) <= 3, "\(code.points)")
        #expect(abs(code.points[1].x - 232) <= 3, "\(code.points)")
    }

    /// An EAN-13 drawn as a camera sees it: `module` px modules, wider by 1 + `tilt` at the
    /// near end (the symbol's plane at an angle), a Gaussian blur of `sigma` modules (in
    /// pixels, the same along the symbol), bars `height` rows high with nothing above or
    /// below, seeded noise of about 3 grey levels.
    static func photographed(
        _ text: String,
        module: Double,
        tilt: Double = 0,
        sigma: Double,
        height: Int
    ) throws -> ImageBuffer {
        let digits = text.compactMap(\.wholeNumberValue)
        let l = BlurredUPCEAN.lCodes
        let r = l.map { $0.map { 1 - $0 } }
        var bits = [1, 0, 1]
        for i in 0..<6 {
            let g = BlurredUPCEAN.parities[digits[0]] & (1 << i) != 0
            bits += g ? Array(r[digits[i + 1]].reversed()) : l[digits[i + 1]]
        }
        bits += [0, 1, 0, 1, 0]
        for i in 7..<13 { bits += r[digits[i]] }
        bits += [1, 0, 1]
        let span = 95 * module
        let width = Int(span) + 80
        var dark = [Double](repeating: 0, count: width)
        for x in 0..<width {
            for sub in 0..<8 {
                let y = (Double(x) + (Double(sub) + 0.5) / 8 - 40) / span
                let u = 95 * y / (1 + tilt - tilt * y)
                if u >= 0, u < 95, bits[Int(u)] == 1 { dark[x] += 1.0 / 8 }
            }
        }
        let s = sigma * module
        let reach = Int(4 * s) + 1
        let kernel = (-reach...reach).map { exp(-0.5 * Double($0 * $0) / (s * s)) }
        let total = kernel.reduce(0, +)
        var seed: UInt64 = 0xB1A5
        var pixels = [UInt8](repeating: 0, count: width * height)
        for x in 0..<width {
            var v = 0.0
            for (j, w) in kernel.enumerated() {
                let xx = min(width - 1, max(0, x + j - reach))
                v += w * dark[xx]
            }
            v /= total
            for y in 0..<height {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let noise = Double(Int((seed >> 33) % 7) - 3)
                pixels[y * width + x] = UInt8(max(0, min(255, 225 - 190 * v + noise)))
            }
        }
        return try ImageBuffer(width: width, height: height, format: .grey, pixels: pixels)
    }

    @Test("Bars blurred into flat grey across their middle read whole, not as two regions")
    func splitByBlur() throws {
        // 3.2 px modules blurred by 0.75 of a module, 60 rows: the texture finder sees two
        // regions, one each side of the middle guard.
        let image = try Self.photographed("1144024264624", module: 3.2, sigma: 0.75, height: 60)
        let codes = Self.reader.scan(image)
        #expect(codes.map(\.text) == ["1144024264624"])
        #expect(codes.map(\.engine) == [.templates])
    }

    @Test(
        "An EAN-13 photographed at an angle and out of focus reads",
        arguments: [0.12, -0.12]
    )
    func tilted(tilt: Double) throws {
        let image = try Self.photographed(
            "5901234123457",
            module: 2.6,
            tilt: tilt,
            sigma: 0.7,
            height: 100
        )
        let codes = Self.reader.scan(image)
        #expect(codes.map(\.text) == ["5901234123457"])
        #expect(codes.map(\.engine) == [.templates])
    }

    @Test("A blurred UPC-A reads as UPC-A (13 digits, a leading 0); upside down too")
    func blurredUPCA() throws {
        for extra in [[], ["-rotate", "180"]] {
            let image = try Self.blurred("UPCA", "03600029145", sigma: 1.8, extra: extra)
            let codes = Self.reader.scan(image)
            #expect(codes.map(\.symbology) == [.upcA], "\(extra)")
            #expect(codes.map(\.text) == ["0036000291452"], "\(extra)")
            #expect(codes.map(\.engine) == [.templates], "\(extra)")
        }
    }

    @Test(
        "A blurred EAN-8 and UPC-E read, fitted (UPC-E as its UPC-A form)",
        arguments: [
            ("EANX", "1234567", 1.6, Symbology.ean8, "12345670"),
            ("EANX", "9638507", 2.0, .ean8, "96385074"),
            ("UPCE", "1234567", 1.6, .upcE, "0123456000070"),
            ("UPCE", "0654321", 2.0, .upcE, "0065100004327"),
            // The last digit 3 and 4 place the others elsewhere in the UPC-A form.
            ("UPCE", "0234563", 1.8, .upcE, "0023400000562"),
            ("UPCE", "0345674", 1.8, .upcE, "0034560000071"),
        ]
    )
    func blurredShortSymbols(
        type: String,
        data: String,
        sigma: Double,
        symbology: Symbology,
        text: String
    ) throws {
        let codes = Self.reader.scan(try Self.blurred(type, data, sigma: sigma))
        #expect(codes.map(\.symbology) == [symbology])
        #expect(codes.map(\.text) == [text])
        #expect(codes.map(\.engine) == [.templates])
    }

    @Test("Only what is asked for is fitted and reported")
    func onlyWhatIsAsked() throws {
        let ean13 = try Self.blurred("EANX", "590123412345", sigma: 1.6)
        let upcE = try Self.blurred("UPCE", "1234567", sigma: 1.6)
        let onlyEAN8 = BarcodeReader(options: BarcodeScanOptions(symbologies: [.ean8]))
        #expect(onlyEAN8.scan(ean13).isEmpty)
        #expect(onlyEAN8.scan(upcE).isEmpty)
        #expect(BlurredUPCEAN.read(ean13, asked: [.upcE, .ean8]) == nil)
        let onlyUPCE = BarcodeReader(options: BarcodeScanOptions(symbologies: [.upcE]))
        #expect(onlyUPCE.scan(upcE).map(\.text) == ["0123456000070"])
    }

    @Test(
        "Other symbologies, blurred or not, fit no EAN or UPC",
        arguments: [
            ("CODE128", "SHOPFLOOR-1234"), ("CODE39", "ABC123"), ("ITF14", "1234567890123"),
            ("CODABAR", "A12345B"), ("DBAR_OMN", "0950110153001"), ("CODE93", "SHOP93X"),
        ]
    )
    func otherSymbologies(type: String, data: String) throws {
        for sigma in [0.8, 1.8] {
            let image = try Self.blurred(type, data, sigma: sigma)
            #expect(
                BlurredUPCEAN.read(image, asked: Set(Symbology.allCases)) == nil,
                "\(type) blurred by \(sigma) px"
            )
        }
    }

    @Test("Random runs of bars, blurred, fit no EAN or UPC")
    func randomBars() throws {
        var seed: UInt64 = 0x5EED
        func next(_ n: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(n))
        }
        var refused = 0
        for _ in 0..<60 {
            // 40-130 modules of bars and spaces 1-4 modules wide, 2-4 px a module.
            let module = 2 + next(3)
            var modules: [UInt8] = []
            var dark = true
            while modules.count < 40 + next(90) {
                modules += [UInt8](repeating: dark ? 30 : 235, count: 1 + next(4))
                dark.toggle()
            }
            let width = modules.count * module + 80
            var pixels = [UInt8](repeating: 235, count: width * 100)
            for y in 15..<85 {
                for (i, v) in modules.enumerated() {
                    for k in 0..<module { pixels[y * width + 40 + i * module + k] = v }
                }
            }
            let sharp = try ImageBuffer(width: width, height: 100, format: .grey, pixels: pixels)
            let png = try sharp.pngData()
            let photo = try Fixtures.convert(
                png,
                to: "png",
                options: ["-blur", "0x\(Double(module) * (0.4 + 0.2 * Double(next(5))))"]
            )
            let image = try ImageBuffer(data: photo, name: "bars").greyscale()
            if BlurredUPCEAN.read(image, asked: Set(Symbology.allCases)) == nil { refused += 1 }
        }
        #expect(refused == 60)
    }

    @Test("Past what the fit can tell apart, an EAN-13 is refused, not misread")
    func tooBlurred() throws {
        // 1.5 modules: the digits' curves no longer differ enough.
        let image = try Self.blurred("EANX", "590123412345", sigma: 3.0)
        let read = BlurredUPCEAN.read(image, asked: Set(Symbology.allCases))
        #expect(read == nil || read?.text == "5901234123457")
    }

    @Test("The check digit and the first digit's parity decide the two best codes")
    func twoBestCodes() {
        // Every position prefers its digit of 4006381333931 by 1, except position 12 (the
        // check digit), which prefers 0: the best valid code keeps the check digit 1.
        let digits = [4, 0, 0, 6, 3, 8, 1, 3, 3, 3, 9, 3, 1]
        let parity = BlurredUPCEAN.parities[digits[0]]
        var out = [Float](repeating: 10, count: 12 * 20)
        for i in 0..<12 {
            let offset = i < 6 && parity & (1 << i) != 0 ? 10 : 0
            out[i * 20 + offset + digits[i + 1]] = 9
        }
        out[11 * 20 + 0] = 8.5
        let codes = BlurredUPCEAN.twoBest(out, .ean13)
        #expect(codes.count == 2)
        #expect(codes.first?.digits == digits)
        #expect(abs((codes.first?.score ?? 0) - 12 * 9) < 0.001)
        // The runner-up differs in two digits at least (one digit alone breaks the check).
        let second = codes.last?.digits ?? []
        #expect(zip(second, digits).filter { $0 != $1 }.count >= 2)
    }
}

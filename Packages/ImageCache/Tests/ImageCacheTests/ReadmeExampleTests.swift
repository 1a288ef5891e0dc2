import Foundation
import ImageCache
import Testing

@Suite("README example")
struct ReadmeExampleTests {
    @Test("the README's example runs against a real server, with a closure transport")
    func example() async throws {
        let site = try ImageSite()
        let imageURL = site.add("/products/00012345678905.png", width: 320, height: 200)
        let nextPage = (1...3).map { site.add("/products/\($0).png", seed: UInt64($0)) }
        let container = try TemporaryFolder()
        let plain = PlainTransport()

        let pipeline = try ImagePipeline(
            directory: container.url.appendingPathComponent("images"),
            diskSizeLimit: 256 << 20,
            transport: ClosureTransport { try await plain.send($0) },
            decoder: PNGHeaderDecoder(),
            logger: quietLogger
        )
        let response = try await pipeline.image(for: ImageRequest(url: imageURL))
        #expect(response.image.width == 320)
        #expect(response.source == .network)
        #expect(!response.isStale)
        let original = try await pipeline.data(for: ImageRequest(url: imageURL)).data
        #expect(original == pngImage(width: 320, height: 200))
        pipeline.startPrefetching(nextPage.map { ImageRequest(url: $0, priority: .low) })
        #expect(
            await site.server.waitUntil { log in
                (1...3).allSatisfy { log.served.contains("/products/\($0).png") }
            }
        )
        #expect(site.count("/products/00012345678905.png") == 1)
    }
}
